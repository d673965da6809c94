(** Sections 5 and 6 inside one partition: what the attention kernel writes for one output
    element, against the weights e_j it computed. Every variant (ours or vLLM's numerics,
    fast or rare path, scalar or fp8 cache) is put in one form, [PartRes]:
      o = N / s_hat * (1 + theta) + zeta,
      |N - sum_j e_j v_j| <= aN sum_j e_j |v_j| + bN sum_j e_j + eN,
    v_j the exact dequantized values, s_hat the computed exp-sum. The partition's exp-sum
    s_hat has no absolute term (sums of floats) and is within g(h_s) of sum_j e_j. *)
From Coq Require Import Reals Lra Lia.
From Flocq Require Import Core.
From PagedAttn Require Import Fp Sums Err Compose Model Weights.
Open Scope R_scope.

Definition PartRes (o s : R) (L : nat) (e v : nat -> R) (aN bN eN th ze : R) : Prop :=
  exists N theta zeta,
    Rabs (N - sumn (fun j => e j * v j) L)
      <= aN * sumn (fun j => e j * Rabs (v j)) L + bN * sumn e L + eN /\
    o = N / s * (1 + theta) + zeta /\ Rabs theta <= th /\ Rabs zeta <= ze.

Lemma PartRes_mono : forall o s L e v aN bN eN th ze aN' bN' eN' th' ze',
  (forall j, (j < L)%nat -> 0 <= e j) ->
  aN <= aN' -> bN <= bN' -> eN <= eN' -> th <= th' -> ze <= ze' ->
  PartRes o s L e v aN bN eN th ze -> PartRes o s L e v aN' bN' eN' th' ze'.
Proof.
  intros o s L e v aN bN eN th ze aN' bN' eN' th' ze' He H1 H2 H3 H4 H5 [N [t [z [A [B [C D]]]]]].
  exists N, t, z. split; [|split; [exact B|split; lra]].
  eapply Rle_trans; [exact A|].
  assert (0 <= sumn (fun j => e j * Rabs (v j)) L)
    by (apply sumn_nonneg; intros; apply Rmult_le_pos; [apply He; auto|apply Rabs_pos]).
  assert (0 <= sumn e L) by (apply sumn_nonneg; intros; apply He; auto).
  assert (aN * sumn (fun j => e j * Rabs (v j)) L <= aN' * sumn (fun j => e j * Rabs (v j)) L)
    by (apply Rmult_le_compat_r; lra).
  assert (bN * sumn e L <= bN' * sumn e L) by (apply Rmult_le_compat_r; lra).
  lra.
Qed.

Definition eta64 : R := bpow radix2 (-86).
Lemma eta64_eq : eta * bpow radix2 64 = eta64.
Proof. unfold eta, eta64. rewrite <- bpow_plus. reflexivity. Qed.
Lemma eta64_pos : 0 <= eta64. Proof. apply bpow_ge_0. Qed.

Lemma split_abs : forall x a b, 0 <= a -> 0 <= b -> Rabs x <= a + b ->
  exists x1 x2, x = x1 + x2 /\ Rabs x1 <= a /\ Rabs x2 <= b.
Proof.
  intros x a b Ha Hb H. destruct (Rle_dec (Rabs x) a) as [S|S].
  - exists x, 0. rewrite Rabs_R0. split; [ring|lra].
  - destruct (Rle_dec 0 x) as [P|N].
    + rewrite Rabs_pos_eq in H, S by lra. exists a, (x - a).
      rewrite (Rabs_pos_eq a), (Rabs_pos_eq (x - a)) by lra. split; [ring|lra].
    + rewrite Rabs_left in H, S by lra. exists (- a), (x + a).
      rewrite Rabs_Ropp, (Rabs_pos_eq a), (Rabs_left1 (x + a)) by lra. split; [ring|lra].
Qed.

(** * The partition's exp-sum *)

Section Part.
Variables (g : geom) (L : nat) (e : nat -> R).
Hypothesis Hg : geom_ok g.
Hypothesis He : forall j, (j < L)%nat -> fmtb (e j) /\ 0 <= e j.

Definition hs : nat := (cdiv L (g_T g) + g_lw g + (g_nw g - 1))%nat.
Definition ho : nat := (g_vt g * cdiv (cdiv L (g_B g)) (g_nw g) + g_lr g + (g_nw g - 1))%nat.

Lemma shat_err : Rabs (shat g L e - sumn e L) <= Sums.g hs * sumn e L.
Proof.
  destruct Hg as [Hv [Hnw [Hvt Hw]]].
  destruct (tree_s_props (g_lw g) (g_nw g) L e Hnw (fun j Hj => proj1 (He j Hj)))
    as [X [M [N [H Lk]]]].
  unfold shat. pose proof (tree_err _ Lk) as T. rewrite X, M, N in T.
  rewrite (sumn_ext (fun i => Rabs (e i)) e) in T by (intros; apply Rabs_pos_eq, He; auto).
  simpl INR in T. rewrite Rmult_0_l, Rmult_0_l, Rplus_0_r in T.
  eapply Rle_trans; [exact T|]. apply Rmult_le_compat_r.
  - apply sumn_nonneg. intros. apply He; auto.
  - apply g_mono. unfold hs, g_T. exact H.
Qed.

Lemma shat_fmtb : fmtb (shat g L e).
Proof. apply cv_fmtb. destruct Hg as [_ [Hnw _]].
  apply (tree_s_props (g_lw g) (g_nw g) L e Hnw (fun j Hj => proj1 (He j Hj))). Qed.

Lemma sum_e_nonneg : 0 <= sumn e L.
Proof. apply sumn_nonneg. intros. apply He; auto. Qed.

(** * Ours: o = kappa * rnd(cv t / s_hat), then * v_scale for fp8 *)

Variables (v : nat -> R) (V : R) (sig : R).
Hypothesis HV : forall j, (j < L)%nat -> Rabs (v j) <= V.

Lemma part_ours_gen : forall t (w vr : nat -> R) (kap zw : R) h (fp8 : bool) vs o,
  lok t -> xv t = sumn (fun j => e j * w j) L -> mv t = sumn (fun j => Rabs (e j * w j)) L ->
  (ht t <= h)%nat -> (nf t <= L)%nat -> 0 < kap -> 0 <= zw ->
  (forall j, (j < L)%nat -> Rabs (kap * w j - vr j) <= zw) ->
  (forall j, (j < L)%nat -> v j = (if fp8 then vs else 1) * vr j) ->
  0 < shat g L e ->
  o = kap * rnd (cv t / shat g L e) ->
  let s := if fp8 then Rabs vs else 1 in
  PartRes (if fp8 then rnd (o * vs) else o) (shat g L e) L e v
    (Sums.g h) (s * (1 + u) ^ h * zw) (s * kap * INR L * eta * (1 + u) ^ h)
    ((1 + u) ^ (if fp8 then 2 else 1) - 1)
    (if fp8 then kap * eta * Rabs vs * (1 + u) + eta else kap * eta).
Proof.
  intros t w vr kap zw h fp8 vs o Lt Xt Mt Ht Nt Pk Pzw Hw Hv Ps Ho s.
  pose proof u_pos. pose proof eta_pos.
  pose proof (tree_err t Lt) as T. rewrite Xt in T.
  set (sh := shat g L e) in *. set (sg := if fp8 then vs else 1).
  assert (Hs : Rabs sg = s) by (unfold sg, s; destruct fp8; [reflexivity|apply Rabs_R1]).
  pose proof (g_mono _ _ Ht) as Gm. pose proof (pow1u_mono _ _ Ht) as Pm.
  pose proof (pow1u_ge1 (ht t)). pose proof (pow1u_ge1 h).
  pose proof (le_INR _ _ Nt) as Nn. pose proof (pos_INR (nf t)).
  assert (Pe : forall j, (j < L)%nat -> 0 <= e j) by (intros; apply He; auto).
  set (SE := sumn e L). set (SEv := sumn (fun j => e j * Rabs (v j)) L).
  set (SEvr := sumn (fun j => e j * Rabs (vr j)) L).
  assert (PSE : 0 <= SE) by apply sum_e_nonneg.
  assert (PSEvr : 0 <= SEvr)
    by (apply sumn_nonneg; intros; apply Rmult_le_pos; [apply Pe; auto|apply Rabs_pos]).
  assert (Ps0 : 0 <= s) by (unfold s; destruct fp8; [apply Rabs_pos|lra]).
  assert (Mw : kap * mv t <= SEvr + zw * SE).
  { rewrite Mt. unfold SEvr, SE. rewrite <- sumn_scal, <- sumn_scal, <- sumn_plus.
    apply sumn_le. intros j Hj.
    rewrite Rabs_mult, (Rabs_pos_eq (e j)) by (apply Pe; auto).
    pose proof (Hw j Hj) as Hwj. pose proof (Pe j Hj).
    assert (Hkw : Rabs (kap * w j) <= Rabs (vr j) + zw).
    { replace (kap * w j) with ((kap * w j - vr j) + vr j) by ring.
      eapply Rle_trans; [apply Rabs_triang|]. lra. }
    rewrite Rabs_mult, (Rabs_pos_eq kap) in Hkw by lra.
    replace (kap * (e j * Rabs (w j))) with (e j * (kap * Rabs (w j))) by ring.
    assert (e j * (kap * Rabs (w j)) <= e j * (Rabs (vr j) + zw)) by (apply Rmult_le_compat_l; lra).
    lra. }
  assert (EN : sumn (fun j => e j * v j) L = sg * sumn (fun j => e j * vr j) L).
  { rewrite <- sumn_scal. apply sumn_ext. intros j Hj. rewrite Hv by exact Hj. fold sg. ring. }
  assert (EA : SEv = s * SEvr).
  { unfold SEv, SEvr. rewrite <- sumn_scal. apply sumn_ext. intros j Hj. rewrite Hv by exact Hj.
    fold sg. rewrite Rabs_mult, Hs. ring. }
  assert (HK : Rabs (kap * cv t - sumn (fun j => e j * vr j) L)
               <= Sums.g h * SEvr + (1 + u) ^ h * zw * SE + kap * INR L * eta * (1 + u) ^ h).
  { replace (kap * cv t - sumn (fun j => e j * vr j) L)
      with (kap * (cv t - sumn (fun j => e j * w j) L)
            + sumn (fun j => e j * (kap * w j - vr j)) L).
    2: { rewrite (sumn_ext (fun j => e j * (kap * w j - vr j))
                            (fun j => kap * (e j * w j) - e j * vr j)) by (intros; ring).
         rewrite sumn_minus, sumn_scal. ring. }
    eapply Rle_trans; [apply Rabs_triang|].
    assert (B1 : Rabs (kap * (cv t - sumn (fun j => e j * w j) L))
                 <= Sums.g h * (SEvr + zw * SE) + kap * INR L * eta * (1 + u) ^ h).
    { rewrite Rabs_mult, (Rabs_pos_eq kap) by lra.
      assert (kap * Rabs (cv t - sumn (fun j => e j * w j) L)
              <= kap * (Sums.g (ht t) * mv t + INR (nf t) * eta * (1 + u) ^ ht t))
        by (apply Rmult_le_compat_l; lra).
      pose proof (mv_nonneg t). pose proof (g_nonneg (ht t)).
      assert (Sums.g (ht t) * (kap * mv t) <= Sums.g h * (SEvr + zw * SE))
        by (apply Rmult_le_compat; [lra|nra|exact Gm|exact Mw]).
      assert (INR (nf t) * eta * (1 + u) ^ ht t <= INR L * eta * (1 + u) ^ h).
      { apply Rmult_le_compat; [nra|lra| |exact Pm]. apply Rmult_le_compat_r; lra. }
      assert (kap * (INR (nf t) * eta * (1 + u) ^ ht t) <= kap * (INR L * eta * (1 + u) ^ h))
        by (apply Rmult_le_compat_l; lra).
      nra. }
    assert (B2 : Rabs (sumn (fun j => e j * (kap * w j - vr j)) L) <= zw * SE).
    { eapply Rle_trans; [apply sumn_abs|]. unfold SE. rewrite <- sumn_scal. apply sumn_le.
      intros j Hj. rewrite Rabs_mult, (Rabs_pos_eq (e j)) by (apply Pe; auto).
      rewrite Rmult_comm. apply Rmult_le_compat_r; [apply Pe; auto|apply Hw; auto]. }
    unfold Sums.g in *. nra. }
  destruct (rnd_err (cv t / sh)) as [d1 [e1 [Hd1 [He1 [_ E1]]]]].
  assert (Hk : Rabs (sg * kap * cv t - sumn (fun j => e j * v j) L)
               <= Sums.g h * SEv + s * (1 + u) ^ h * zw * SE + s * kap * INR L * eta * (1 + u) ^ h).
  { rewrite EN. replace (sg * kap * cv t - sg * sumn (fun j => e j * vr j) L)
      with (sg * (kap * cv t - sumn (fun j => e j * vr j) L)) by ring.
    rewrite Rabs_mult, Hs, EA.
    assert (s * Rabs (kap * cv t - sumn (fun j => e j * vr j) L)
            <= s * (Sums.g h * SEvr + (1 + u) ^ h * zw * SE + kap * INR L * eta * (1 + u) ^ h))
      by (apply Rmult_le_compat_l; lra).
    nra. }
  destruct fp8.
  - destruct (rnd_err (o * vs)) as [d2 [e2 [Hd2 [He2 [_ E2]]]]].
    exists (sg * kap * cv t), ((1 + d1) * (1 + d2) - 1), (kap * e1 * vs * (1 + d2) + e2).
    split; [exact Hk|]. split; [|split].
    + rewrite E2, Ho, E1. unfold sg. field. lra.
    + simpl. replace ((1 + u) * ((1 + u) * 1) - 1) with ((1 + u) * (1 + u) - 1) by ring.
      apply prod_err; auto.
    + eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult, (Rabs_pos_eq kap) by lra.
      assert (Rabs (1 + d2) <= 1 + u) by (apply Rabs_le; apply Rabs_le_inv in Hd2; lra).
      assert (kap * Rabs e1 <= kap * eta) by (apply Rmult_le_compat_l; lra).
      assert (kap * Rabs e1 * Rabs vs <= kap * eta * Rabs vs) by (apply Rmult_le_compat_r; [apply Rabs_pos|lra]).
      assert (0 <= kap * Rabs e1 * Rabs vs)
        by (apply Rmult_le_pos; [apply Rmult_le_pos; [lra|apply Rabs_pos]|apply Rabs_pos]).
      pose proof (Rabs_pos (1 + d2)).
      assert (kap * Rabs e1 * Rabs vs * Rabs (1 + d2) <= kap * eta * Rabs vs * (1 + u))
        by (apply Rmult_le_compat; lra).
      lra.
  - exists (sg * kap * cv t), d1, (kap * e1).
    split; [exact Hk|]. split; [|split].
    + rewrite Ho, E1. unfold sg. field. lra.
    + simpl. lra.
    + rewrite Rabs_mult, (Rabs_pos_eq kap) by lra. apply Rmult_le_compat_l; lra.
Qed.

(** * vLLM: probabilities pp_j = round_to<scalar>(e_j * inv), inv = 1 / (s_hat + 1e-6f) *)

Lemma fmtb_eps32 : fmtb eps32.
Proof.
  apply fmtb_FLT. exists (Float radix2 8796093 (-43)); [reflexivity| |simpl; unfold emin; lia].
  simpl. unfold prec. reflexivity.
Qed.

Lemma eps32_pos : 0 < eps32.
Proof. unfold eps32. apply Rmult_lt_0_compat; [apply IZR_lt; lia|apply bpow_gt_0]. Qed.

Definition thv (smin : R) : R := (1 + u) / ((1 - u) * (1 - eps32 / smin)) - 1.
Definition rp (sc : sfmt) : R := (1 + u) * (1 + us sc) - 1.
Definition zp (sc : sfmt) : R := eta * (1 + us sc) + etas sc.

Lemma thv_nonneg : forall smin, 0 < smin -> eps32 / smin < 1 -> 0 <= thv smin.
Proof.
  intros smin Ps H. unfold thv. pose proof u_pos. pose proof u_small.
  assert (0 < eps32 / smin) by (apply Rdiv_lt_0_compat; [apply eps32_pos|lra]).
  assert (0 < (1 - u) * (1 - eps32 / smin)) by (apply Rmult_lt_0_compat; lra).
  assert ((1 - u) * (1 - eps32 / smin) <= 1 + u) by nra.
  assert (1 <= (1 + u) / ((1 - u) * (1 - eps32 / smin))).
  { apply (Rmult_le_reg_r ((1 - u) * (1 - eps32 / smin))); [lra|].
    unfold Rdiv. rewrite Rmult_assoc, Rinv_l by lra. lra. }
  lra.
Qed.

(** inv = (1 + theta) / s_hat + e2 with |theta| <= thv: the epsilon's bias and two
    roundings, as one relative factor on the partition's output. *)
Lemma inv_eps_err : forall sh smin, fmtb sh -> 0 < smin -> smin <= sh -> eps32 / smin < 1 ->
  exists th e2, inv_eps sh = (1 + th) / sh + e2 /\ Rabs th <= thv smin /\ Rabs e2 <= eta.
Proof.
  intros sh smin Fs Pm Hm Heps. pose proof u_pos. pose proof u_small. pose proof eps32_pos.
  destruct (rnd_plus sh eps32 Fs fmtb_eps32) as [d1 [Hd1 E1]].
  destruct (rnd_err (/ rnd (sh + eps32))) as [d2 [e2 [Hd2 [He2 [_ E2]]]]].
  apply Rabs_le_inv in Hd1. apply Rabs_le_inv in Hd2.
  assert (PD : 0 < (sh + eps32) * (1 + d1)) by (apply Rmult_lt_0_compat; lra).
  set (th := sh * (1 + d2) / ((sh + eps32) * (1 + d1)) - 1).
  exists th, e2. split; [|split; [|exact He2]].
  - unfold inv_eps. rewrite E2, E1. unfold th. field. split; lra.
  - set (r := sh / (sh + eps32)). set (q := (1 + d2) / (1 + d1)).
    assert (Eth : 1 + th = r * q) by (unfold th, r, q; field; split; lra).
    set (er := eps32 / smin) in *.
    assert (Per : 0 < er) by (apply Rdiv_lt_0_compat; lra).
    assert (Hr1 : r <= 1).
    { unfold r. apply (Rmult_le_reg_r (sh + eps32)); [lra|].
      unfold Rdiv. rewrite Rmult_assoc, Rinv_l by lra. lra. }
    assert (Hr0 : 1 - er <= r).
    { unfold r. apply (Rmult_le_reg_r (sh + eps32)); [lra|].
      unfold Rdiv. rewrite Rmult_assoc, Rinv_l by lra.
      assert (eps32 / sh <= er).
      { unfold er, Rdiv. apply Rmult_le_compat_l; [lra|]. apply Rinv_le_contravar; lra. }
      assert (eps32 = sh * (eps32 / sh)) by (field; lra).
      assert ((1 - er) * (sh + eps32) <= sh) by nra. lra. }
    assert (Hq1 : q <= (1 + u) / (1 - u)).
    { unfold q. apply (Rmult_le_reg_r (1 + d1)); [lra|].
      replace ((1 + d2) / (1 + d1) * (1 + d1)) with (1 + d2) by (field; lra).
      apply (Rmult_le_reg_r (1 - u)); [lra|].
      replace ((1 + u) / (1 - u) * (1 + d1) * (1 - u)) with ((1 + u) * (1 + d1)) by (field; lra).
      nra. }
    assert (Hq0 : (1 - u) / (1 + u) <= q).
    { unfold q. apply (Rmult_le_reg_r (1 + d1)); [lra|].
      replace ((1 + d2) / (1 + d1) * (1 + d1)) with (1 + d2) by (field; lra).
      apply (Rmult_le_reg_r (1 + u)); [lra|].
      replace ((1 - u) / (1 + u) * (1 + d1) * (1 + u)) with ((1 - u) * (1 + d1)) by (field; lra).
      nra. }
    assert (Pq : 0 < (1 - u) / (1 + u)) by (apply Rdiv_lt_0_compat; lra).
    assert (Up : r * q <= (1 + u) / ((1 - u) * (1 - er))).
    { apply Rle_trans with (1 * ((1 + u) / (1 - u))); [apply Rmult_le_compat; lra|].
      rewrite Rmult_1_l. unfold Rdiv. apply Rmult_le_compat_l; [lra|].
      apply Rinv_le_contravar; [apply Rmult_lt_0_compat; lra|nra]. }
    set (a := (1 - er) * ((1 - u) / (1 + u))).
    assert (Pa : 0 < a) by (apply Rmult_lt_0_compat; lra).
    assert (Lo : a <= r * q) by (apply Rmult_le_compat; lra).
    assert (Ea : (1 + u) / ((1 - u) * (1 - er)) = / a) by (unfold a; field; split; lra).
    assert (AG : 2 - / a <= a).
    { assert (a * / a = 1) by (field; lra). assert (0 < / a) by (apply Rinv_0_lt_compat; lra).
      nra. }
    unfold thv. fold er. rewrite Ea in Up |- *. apply Rabs_le. lra.
Qed.

Definition smax (L : nat) (gs emax : R) : R := (1 + gs) * INR L * emax.
Definition vv_max (rw zw V : R) : R := (1 + rw) * V + zw.
Definition K1v (sc : sfmt) (h : nat) (smin smx : R) : R :=
  (1 + thv smin + smx * eta) * (rp sc + Sums.g h * (1 + rp sc)) / (1 - thv smin).
Definition aN_v (sc : sfmt) (h : nat) (smin smx rw : R) : R :=
  rw + (1 + rw) * K1v sc h smin smx.
Definition bN_v (sc : sfmt) (h : nat) (L : nat) (gs smin smx rw zw V : R) : R :=
  zw * (1 + K1v sc h smin smx)
  + Sums.g h * (1 + gs) * zp sc * INR L * vv_max rw zw V / (1 - thv smin).
Definition ze_v (sc : sfmt) (L : nat) (emax rw zw V abst : R) : R :=
  eta * vv_max rw zw V * INR L * emax + INR L * zp sc * vv_max rw zw V + abst.

Lemma rp_nonneg : forall sc, 0 <= rp sc.
Proof. intros sc. unfold rp. pose proof u_pos. pose proof (us_nonneg sc). nra. Qed.
Lemma zp_nonneg : forall sc, 0 <= zp sc.
Proof. intros sc. unfold zp. pose proof eta_pos. pose proof (us_nonneg sc). pose proof (etas_nonneg sc). nra. Qed.

Lemma cvt_rnd_err : forall sc x, Rabs (cvt sc (rnd x) - x) <= rp sc * Rabs x + zp sc.
Proof.
  intros sc x. eapply Rle_trans; [apply cvt_near|]. pose proof (rnd_abs x).
  pose proof (us_nonneg sc). pose proof u_pos.
  assert ((1 + us sc) * Rabs (rnd x - x) <= (1 + us sc) * (u * Rabs x + eta))
    by (apply Rmult_le_compat_l; lra).
  unfold rp, zp. nra.
Qed.

Lemma part_vllm_gen : forall (sc : sfmt) (pp w : nat -> R) t kap rw zw h smin emax abst Lb gsb,
  (forall j, (j < L)%nat -> pp j = cvt sc (rnd (e j * inv_eps (shat g L e)))) ->
  lok t -> xv t = sumn (fun j => pp j * w j) L -> mv t = sumn (fun j => Rabs (pp j * w j)) L ->
  (ht t <= h)%nat -> (nf t <= L)%nat -> 0 < kap -> 0 <= rw -> 0 <= zw -> 0 <= V ->
  (L <= Lb)%nat -> Sums.g hs <= gsb ->
  kap * INR L * eta * (1 + u) ^ h <= abst ->
  (forall j, (j < L)%nat -> Rabs (kap * w j - v j) <= rw * Rabs (v j) + zw) ->
  0 < smin -> smin <= shat g L e -> eps32 / smin < 1 -> thv smin < 1 ->
  (forall j, (j < L)%nat -> e j <= emax) -> 0 <= emax ->
  PartRes (kap * cv t) (shat g L e) L e v
    (aN_v sc h smin (smax Lb gsb emax) rw)
    (bN_v sc h Lb gsb smin (smax Lb gsb emax) rw zw V) 0
    (thv smin) (ze_v sc Lb emax rw zw V abst).
Proof.
  intros sc pp w t kap rw zw h smin emax abst Lb gsb Hpp Lt Xt Mt Ht Nt Pk Prw Pzw PV HLb Hgsb Hat Hw
    Psm Hsm Heps Hth Hem Pemax.
  pose proof (le_INR _ _ HLb) as HLbR.
  pose proof u_pos. pose proof eta_pos. pose proof (us_nonneg sc). pose proof (etas_nonneg sc).
  pose proof (rp_nonneg sc) as Prp. pose proof (zp_nonneg sc) as Pzp.
  set (sh := shat g L e) in *.
  assert (Psh : 0 < sh) by lra.
  assert (Fsh : fmtb sh) by apply shat_fmtb.
  assert (Pe : forall j, (j < L)%nat -> 0 <= e j) by (intros; apply He; auto).
  set (gs := gsb). set (smx := smax Lb gs emax).
  set (SE := sumn e L). set (SEv := sumn (fun j => e j * Rabs (v j)) L).
  assert (PSE : 0 <= SE) by apply sum_e_nonneg.
  assert (PSEv : 0 <= SEv)
    by (apply sumn_nonneg; intros; apply Rmult_le_pos; [apply Pe; auto|apply Rabs_pos]).
  assert (Hgs : 0 <= gs) by (unfold gs; pose proof (g_nonneg hs); lra).
  assert (Sh1 : Rabs (sh - SE) <= gs * SE).
  { eapply Rle_trans; [apply shat_err|]. apply Rmult_le_compat_r; [exact PSE|exact Hgsb]. }
  assert (PL : 0 <= INR L) by apply pos_INR.
  assert (SEmax : SE <= INR Lb * emax).
  { unfold SE. eapply Rle_trans; [apply sumn_le_max; intros; apply Hem; auto|].
    apply Rmult_le_compat_r; [exact Pemax|exact HLbR]. }
  assert (Shle : sh <= (1 + gs) * SE) by (apply Rabs_le_inv in Sh1; lra).
  assert (Shmax : sh <= smx).
  { unfold smx, smax. assert ((1 + gs) * SE <= (1 + gs) * (INR Lb * emax)) by (apply Rmult_le_compat_l; lra). lra. }
  pose proof (thv_nonneg smin Psm Heps) as Pthv.
  set (Vv := vv_max rw zw V).
  set (W' := fun j => kap * w j).
  assert (HW' : forall j, (j < L)%nat -> Rabs (W' j) <= Vv).
  { intros j Hj. unfold W', Vv, vv_max. pose proof (Hw j Hj). pose proof (HV j Hj).
    replace (kap * w j) with ((kap * w j - v j) + v j) by ring.
    eapply Rle_trans; [apply Rabs_triang|].
    assert (rw * Rabs (v j) <= rw * V) by (apply Rmult_le_compat_l; lra). lra. }
  assert (PVv : 0 <= Vv) by (unfold Vv, vv_max; nra).
  destruct (inv_eps_err sh smin Fsh Psm Hsm Heps) as [th [e2 [Einv [Hth' He2]]]].
  set (iv := inv_eps sh) in *.
  assert (Hiv : sh * Rabs iv <= 1 + thv smin + smx * eta).
  { rewrite Einv. replace ((1 + th) / sh + e2) with ((1 + th + sh * e2) / sh) by (field; lra).
    unfold Rdiv. rewrite Rabs_mult, Rabs_inv, (Rabs_pos_eq sh) by lra.
    replace (sh * (Rabs (1 + th + sh * e2) * / sh)) with (Rabs (1 + th + sh * e2)) by (field; lra).
    eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult, (Rabs_pos_eq sh) by lra.
    eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|]. rewrite Rabs_R1.
    assert (sh * Rabs e2 <= smx * eta) by (apply Rmult_le_compat; auto using Rabs_pos; lra). lra. }
  (* the probabilities' errors r_j = pp_j - e_j inv *)
  set (r := fun j => pp j - e j * iv).
  assert (Hr : forall j, (j < L)%nat -> Rabs (r j) <= rp sc * (e j * Rabs iv) + zp sc).
  { intros j Hj. unfold r. rewrite Hpp by exact Hj. fold sh iv.
    eapply Rle_trans; [apply cvt_rnd_err|]. rewrite Rabs_mult, (Rabs_pos_eq (e j)) by (apply Pe; auto). lra. }
  set (SEW := sumn (fun j => e j * Rabs (W' j)) L).
  assert (PSEW : 0 <= SEW)
    by (apply sumn_nonneg; intros; apply Rmult_le_pos; [apply Pe; auto|apply Rabs_pos]).
  assert (SEWb : SEW <= (1 + rw) * SEv + zw * SE).
  { unfold SEW, SEv, SE. rewrite <- !sumn_scal, <- sumn_plus. apply sumn_le. intros j Hj.
    pose proof (Hw j Hj). pose proof (Pe j Hj).
    assert (Rabs (W' j) <= (1 + rw) * Rabs (v j) + zw).
    { unfold W'. replace (kap * w j) with ((kap * w j - v j) + v j) by ring.
      eapply Rle_trans; [apply Rabs_triang|]. lra. }
    assert (e j * Rabs (W' j) <= e j * ((1 + rw) * Rabs (v j) + zw)) by (apply Rmult_le_compat_l; lra).
    lra. }
  assert (SEWv : SEW <= Vv * SE).
  { unfold SEW, SE. rewrite <- sumn_scal. apply sumn_le. intros j Hj.
    rewrite Rmult_comm. apply Rmult_le_compat_r; [apply Pe; auto|apply HW'; auto]. }
  (* the tree's error *)
  pose proof (tree_err t Lt) as T. rewrite Xt in T.
  pose proof (g_mono _ _ Ht) as Gm. pose proof (pow1u_mono _ _ Ht) as Pm.
  pose proof (pow1u_ge1 (ht t)). pose proof (le_INR _ _ Nt). pose proof (pos_INR (nf t)).
  set (SPW := sumn (fun j => Rabs (pp j) * Rabs (W' j)) L).
  assert (PSPW : 0 <= SPW)
    by (apply sumn_nonneg; intros; apply Rmult_le_pos; apply Rabs_pos).
  assert (KM : kap * mv t = SPW).
  { rewrite Mt. unfold SPW. rewrite <- sumn_scal. apply sumn_ext. intros.
    unfold W'. rewrite !Rabs_mult, (Rabs_pos_eq kap) by lra. ring. }
  set (Et := kap * cv t - sumn (fun j => pp j * W' j) L).
  assert (HEt : Rabs Et <= Sums.g h * SPW + abst).
  { unfold Et. replace (sumn (fun j => pp j * W' j) L) with (kap * sumn (fun j => pp j * w j) L)
      by (rewrite <- sumn_scal; apply sumn_ext; intros; unfold W'; ring).
    replace (kap * cv t - kap * sumn (fun j => pp j * w j) L)
      with (kap * (cv t - sumn (fun j => pp j * w j) L)) by ring.
    rewrite Rabs_mult, (Rabs_pos_eq kap) by lra.
    assert (kap * Rabs (cv t - sumn (fun j => pp j * w j) L)
            <= kap * (Sums.g (ht t) * mv t + INR (nf t) * eta * (1 + u) ^ ht t))
      by (apply Rmult_le_compat_l; lra).
    pose proof (mv_nonneg t). pose proof (g_nonneg (ht t)).
    assert (Sums.g (ht t) * (kap * mv t) <= Sums.g h * SPW)
      by (rewrite KM; apply Rmult_le_compat_r; lra).
    assert (INR (nf t) * eta * (1 + u) ^ ht t <= INR L * eta * (1 + u) ^ h).
    { apply Rmult_le_compat; [apply Rmult_le_pos; [apply pos_INR|lra]|lra| |exact Pm]. apply Rmult_le_compat_r; lra. }
    assert (kap * (INR (nf t) * eta * (1 + u) ^ ht t) <= kap * (INR L * eta * (1 + u) ^ h))
      by (apply Rmult_le_compat_l; lra).
    assert (kap * (Sums.g (ht t) * mv t + INR (nf t) * eta * (1 + u) ^ ht t)
            = Sums.g (ht t) * (kap * mv t) + kap * (INR (nf t) * eta * (1 + u) ^ ht t)) by ring.
    assert (kap * (INR L * eta * (1 + u) ^ h) = kap * INR L * eta * (1 + u) ^ h) by ring.
    lra. }
  assert (PSg : 0 <= Sums.g h) by apply g_nonneg.
  assert (Pabst : 0 <= abst).
  { eapply Rle_trans; [|exact Hat]. pose proof (pow1u_ge1 h). pose proof (pos_INR L).
    apply Rmult_le_pos; [apply Rmult_le_pos; [apply Rmult_le_pos|]|]; lra. }
  assert (PgS : 0 <= Sums.g h * SPW) by (apply Rmult_le_pos; lra).
  destruct (split_abs Et (Sums.g h * SPW) abst PgS Pabst HEt)
    as [Er [Ea [EEt [HEr HEa]]]].
  set (SR := sumn (fun j => r j * W' j) L).
  assert (HSR : Rabs SR <= rp sc * Rabs iv * SEW + zp sc * INR Lb * Vv).
  { eapply Rle_trans; [apply sumn_abs|].
    apply Rle_trans with (sumn (fun j => rp sc * Rabs iv * (e j * Rabs (W' j)) + zp sc * Vv) L).
    - apply sumn_le. intros j Hj. rewrite Rabs_mult. pose proof (Hr j Hj). pose proof (HW' j Hj).
      pose proof (Rabs_pos (r j)). pose proof (Rabs_pos (W' j)). pose proof (Pe j Hj).
      assert (Rabs (r j) * Rabs (W' j) <= (rp sc * (e j * Rabs iv) + zp sc) * Rabs (W' j))
        by (apply Rmult_le_compat_r; lra).
      assert (zp sc * Rabs (W' j) <= zp sc * Vv) by (apply Rmult_le_compat_l; lra).
      assert ((rp sc * (e j * Rabs iv) + zp sc) * Rabs (W' j)
              = rp sc * Rabs iv * (e j * Rabs (W' j)) + zp sc * Rabs (W' j)) by ring.
      lra.
    - rewrite sumn_plus, sumn_scal, sumn_const. unfold SEW.
      assert (INR L * (zp sc * Vv) <= INR Lb * (zp sc * Vv)) by (apply Rmult_le_compat_r; [apply Rmult_le_pos; lra|lra]).
      lra. }
  assert (PRv : 0 <= rp sc * Rabs iv * SEW) by (apply Rmult_le_pos; [apply Rmult_le_pos; [lra|apply Rabs_pos]|lra]).
  assert (PZv : 0 <= zp sc * INR Lb * Vv) by (apply Rmult_le_pos; [apply Rmult_le_pos; [lra|apply pos_INR]|lra]).
  destruct (split_abs SR _ _ PRv PZv HSR) as [R1 [R2 [ESR [HR1 HR2]]]].
  set (SW := sumn (fun j => e j * W' j) L).
  exists (SW + sh * (R1 + Er) / (1 + th)), th, (e2 * SW + R2 + Ea).
  assert (Pth : 0 < 1 + th) by (apply Rabs_le_inv in Hth'; lra).
  split; [|split; [|split; [exact Hth'|]]].
  - (* the numerator *)
    assert (A1 : Rabs (SW - sumn (fun j => e j * v j) L) <= rw * SEv + zw * SE).
    { unfold SW. rewrite <- sumn_minus. eapply Rle_trans; [apply sumn_abs|].
      unfold SEv, SE. rewrite <- !sumn_scal, <- sumn_plus. apply sumn_le. intros j Hj.
      replace (e j * W' j - e j * v j) with (e j * (W' j - v j)) by ring.
      rewrite Rabs_mult, (Rabs_pos_eq (e j)) by (apply Pe; auto). pose proof (Hw j Hj). pose proof (Pe j Hj).
      unfold W'. assert (e j * Rabs (kap * w j - v j) <= e j * (rw * Rabs (v j) + zw)) by (apply Rmult_le_compat_l; lra).
      lra. }
    assert (A2 : sh * Rabs R1 <= rp sc * (1 + thv smin + smx * eta) * SEW).
    { assert (sh * Rabs R1 <= sh * (rp sc * Rabs iv * SEW)) by (apply Rmult_le_compat_l; lra).
      assert (sh * (rp sc * Rabs iv * SEW) = rp sc * (sh * Rabs iv) * SEW) by ring.
      assert (rp sc * (sh * Rabs iv) * SEW <= rp sc * (1 + thv smin + smx * eta) * SEW)
        by (apply Rmult_le_compat_r; [lra|apply Rmult_le_compat_l; lra]).
      lra. }
    assert (SPWb : sh * SPW <= (1 + thv smin + smx * eta) * (1 + rp sc) * SEW + (1 + gs) * SE * zp sc * INR Lb * Vv).
    { unfold SPW. rewrite <- sumn_scal.
      apply Rle_trans with (sumn (fun j => (1 + thv smin + smx * eta) * (1 + rp sc) * (e j * Rabs (W' j))
                                          + sh * zp sc * Vv) L).
      - apply sumn_le. intros j Hj. pose proof (Hr j Hj). pose proof (HW' j Hj). pose proof (Pe j Hj).
        pose proof (Rabs_pos (W' j)).
        assert (Hp : Rabs (pp j) <= (1 + rp sc) * (e j * Rabs iv) + zp sc).
        { replace (pp j) with (e j * iv + r j) by (unfold r; ring).
          eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult, (Rabs_pos_eq (e j)) by lra. lra. }
        assert (sh * Rabs (pp j) <= (1 + rp sc) * e j * (sh * Rabs iv) + sh * zp sc).
        { assert (sh * Rabs (pp j) <= sh * ((1 + rp sc) * (e j * Rabs iv) + zp sc)) by (apply Rmult_le_compat_l; lra).
          lra. }
        assert ((1 + rp sc) * e j * (sh * Rabs iv) <= (1 + rp sc) * e j * (1 + thv smin + smx * eta))
          by (apply Rmult_le_compat_l; [apply Rmult_le_pos; lra|lra]).
        assert (sh * (Rabs (pp j) * Rabs (W' j))
                <= ((1 + rp sc) * e j * (1 + thv smin + smx * eta) + sh * zp sc) * Rabs (W' j)).
        { rewrite <- Rmult_assoc. apply Rmult_le_compat_r; lra. }
        assert (sh * zp sc * Rabs (W' j) <= sh * zp sc * Vv)
          by (apply Rmult_le_compat_l; [apply Rmult_le_pos; lra|apply HW'; exact Hj]).
        assert (((1 + rp sc) * e j * (1 + thv smin + smx * eta) + sh * zp sc) * Rabs (W' j)
                = (1 + thv smin + smx * eta) * (1 + rp sc) * (e j * Rabs (W' j)) + sh * zp sc * Rabs (W' j)) by ring.
        lra.
      - rewrite sumn_plus, sumn_scal, sumn_const. fold SEW.
        assert (INR L * (sh * zp sc * Vv) <= (1 + gs) * SE * zp sc * INR Lb * Vv).
        { assert (INR L * (sh * zp sc * Vv) <= INR Lb * (sh * zp sc * Vv))
            by (apply Rmult_le_compat_r; [apply Rmult_le_pos; [apply Rmult_le_pos|]; lra|lra]).
          apply Rle_trans with (INR Lb * (sh * zp sc * Vv)); [lra|].
          replace (INR Lb * (sh * zp sc * Vv)) with (sh * (zp sc * INR Lb * Vv)) by ring.
          replace ((1 + gs) * SE * zp sc * INR Lb * Vv) with ((1 + gs) * SE * (zp sc * INR Lb * Vv)) by ring.
          apply Rmult_le_compat_r; [apply Rmult_le_pos; [apply Rmult_le_pos|]; lra|lra]. }
        lra. }
    assert (A3 : sh * Rabs Er <= Sums.g h * ((1 + thv smin + smx * eta) * (1 + rp sc) * SEW
                                            + (1 + gs) * SE * zp sc * INR Lb * Vv)).
    { assert (sh * Rabs Er <= sh * (Sums.g h * SPW)) by (apply Rmult_le_compat_l; lra).
      assert (sh * (Sums.g h * SPW) = Sums.g h * (sh * SPW)) by ring.
      assert (Sums.g h * (sh * SPW) <= Sums.g h * ((1 + thv smin + smx * eta) * (1 + rp sc) * SEW
                                                  + (1 + gs) * SE * zp sc * INR Lb * Vv))
        by (apply Rmult_le_compat_l; lra).
      lra. }
    replace (SW + sh * (R1 + Er) / (1 + th) - sumn (fun j => e j * v j) L)
      with ((SW - sumn (fun j => e j * v j) L) + sh * (R1 + Er) / (1 + th)) by ring.
    eapply Rle_trans; [apply Rabs_triang|].
    assert (Q : Rabs (sh * (R1 + Er) / (1 + th))
                <= (sh * Rabs R1 + sh * Rabs Er) / (1 - thv smin)).
    { unfold Rdiv. rewrite !Rabs_mult, Rabs_inv, (Rabs_pos_eq sh), (Rabs_pos_eq (1 + th)) by lra.
      assert (1 - thv smin <= 1 + th) by (apply Rabs_le_inv in Hth'; lra).
      assert (/ (1 + th) <= / (1 - thv smin)) by (apply Rinv_le_contravar; lra).
      assert (Rabs (R1 + Er) <= Rabs R1 + Rabs Er) by apply Rabs_triang.
      assert (0 <= / (1 + th)) by (left; apply Rinv_0_lt_compat; lra).
      assert (sh * Rabs (R1 + Er) <= sh * Rabs R1 + sh * Rabs Er).
      { apply Rle_trans with (sh * (Rabs R1 + Rabs Er)); [apply Rmult_le_compat_l; lra|right; ring]. }
      apply Rmult_le_compat; [apply Rmult_le_pos; [lra|apply Rabs_pos]|lra|lra|lra]. }
    eapply Rle_trans; [apply Rplus_le_compat; [exact A1|exact Q]|].
    assert (Pd : 0 < 1 - thv smin) by lra.
    assert (N1 : (sh * Rabs R1 + sh * Rabs Er) / (1 - thv smin)
                 <= K1v sc h smin smx * SEW
                    + Sums.g h * (1 + gs) * zp sc * INR Lb * Vv / (1 - thv smin) * SE).
    { unfold K1v.
      apply Rle_trans with ((rp sc * (1 + thv smin + smx * eta) * SEW
          + Sums.g h * ((1 + thv smin + smx * eta) * (1 + rp sc) * SEW + (1 + gs) * SE * zp sc * INR Lb * Vv))
          / (1 - thv smin)).
      - unfold Rdiv. apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat; lra|lra].
      - right. field. lra. }
    assert (N2 : K1v sc h smin smx * SEW <= K1v sc h smin smx * ((1 + rw) * SEv + zw * SE)).
    { apply Rmult_le_compat_l; [|exact SEWb]. unfold K1v.
      assert (0 <= smx * eta) by (apply Rmult_le_pos; lra).
      assert (0 <= Sums.g h * (1 + rp sc)) by (apply Rmult_le_pos; lra).
      apply Rmult_le_pos; [apply Rmult_le_pos; lra|left; apply Rinv_0_lt_compat; lra]. }
    unfold aN_v, bN_v. fold smx gs Vv SEv SE. lra.
  - (* the output *)
    assert (E1 : kap * cv t = sumn (fun j => pp j * W' j) L + (Er + Ea)) by (unfold Et in EEt; lra).
    rewrite E1.
    replace (sumn (fun j => pp j * W' j) L) with (iv * SW + SR).
    2: { unfold SW, SR. rewrite <- sumn_scal, <- sumn_plus. apply sumn_ext. intros. unfold r. ring. }
    rewrite ESR, Einv. field. split; lra.
  - (* the absolute part *)
    unfold ze_v. fold Vv.
    assert (Rabs (e2 * SW) <= eta * (Vv * (INR Lb * emax))).
    { rewrite Rabs_mult. apply Rmult_le_compat; auto using Rabs_pos.
      unfold SW. eapply Rle_trans; [apply sumn_abs|].
      apply Rle_trans with SEW.
      - apply sumn_le. intros j Hj. rewrite Rabs_mult, (Rabs_pos_eq (e j)) by (apply Pe; auto). lra.
      - eapply Rle_trans; [exact SEWv|]. apply Rmult_le_compat_l; lra. }
    eapply Rle_trans; [apply Rabs_triang|]. eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|].
    unfold vv_max in *. fold Vv. lra.
Qed.

End Part.
