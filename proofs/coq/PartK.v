(** The partition lemmas of Part.v instantiated for the code paths of Model.v: ours and
    vLLM's numerics, fast (P.V trees) and rare (one fmaf chain on values scaled by 2^-64)
    paths, scalar or fp8 cache; the rare path's saturation; and the exclusion of the rare
    path when no partial can reach FLT_MAX / NUM_WARPS. *)
From Coq Require Import Reals Lra Lia.
From Flocq Require Import Core.
From PagedAttn Require Import Fp Sums Err Compose Model Weights Part.
Open Scope R_scope.

(** The constants of one partition's result (PartRes). *)
Record pc := PC { pc_aN : R; pc_bN : R; pc_eN : R; pc_th : R; pc_ze : R }.

Definition pc_max (a b : pc) : pc :=
  PC (Rmax (pc_aN a) (pc_aN b)) (Rmax (pc_bN a) (pc_bN b)) (Rmax (pc_eN a) (pc_eN b))
     (Rmax (pc_th a) (pc_th b)) (Rmax (pc_ze a) (pc_ze b)).

Definition sgm (nm : numerics) (vs : R) : R := if n_fp8 nm then Rabs vs else 1.

(** Ours, fast path: kappa = 1, exact values, h_o. *)
Definition pc_ours_fast (g : geom) (nm : numerics) (vs : R) (L : nat) : pc :=
  PC (Sums.g (ho g L)) 0 (sgm nm vs * INR L * eta * (1 + u) ^ ho g L)
     ((1 + u) ^ (if n_fp8 nm then 2 else 1) - 1)
     (if n_fp8 nm then eta * Rabs vs * (1 + u) + eta else eta).
(** Ours, rare path: kappa = 2^64, values off by 2^-86 after scaling back, chain L. *)
Definition pc_ours_rare (nm : numerics) (vs : R) (L : nat) : pc :=
  PC (Sums.g L) (sgm nm vs * (1 + u) ^ L * eta64) (sgm nm vs * INR L * eta64 * (1 + u) ^ L)
     ((1 + u) ^ (if n_fp8 nm then 2 else 1) - 1)
     (if n_fp8 nm then eta64 * Rabs vs * (1 + u) + eta else eta64).

(** vLLM: rw, zw of the values as the P.V loop reads them. *)
Definition rw_fast (nm : numerics) : R := if n_fp8 nm then rp (n_s nm) else 0.
Definition zw_fast (nm : numerics) : R := if n_fp8 nm then zp (n_s nm) else 0.
Definition rw_rare (nm : numerics) : R := if n_fp8 nm then u else 0.
Definition zw_rare (nm : numerics) (vs : R) : R :=
  if n_fp8 nm then eta64 * (Rabs vs * (1 + u) + 1) else eta64.

Definition pc_vllm (g : geom) (nm : numerics) (vs : R) (L : nat) (smin emax V : R)
    (rare : bool) : pc :=
  let h := if rare then L else ho g L in
  let rw := if rare then rw_rare nm else rw_fast nm in
  let zw := if rare then zw_rare nm vs else zw_fast nm in
  let ab := if rare then INR L * eta64 * (1 + u) ^ L else INR L * eta * (1 + u) ^ ho g L in
  let smx := smax L (Sums.g (hs g L)) emax in
  PC (aN_v (n_s nm) h smin smx rw) (bN_v (n_s nm) h L (Sums.g (hs g L)) smin smx rw zw V) 0
     (thv smin) (ze_v (n_s nm) L emax rw zw V ab).

(** The constants of the partition's result, for the path taken. *)
Definition pcs (g : geom) (nm : numerics) (vs : R) (L : nat) (smin emax V : R)
    (rare : bool) : pc :=
  if n_vl nm then pc_vllm g nm vs L smin emax V rare
  else if rare then pc_ours_rare nm vs L else pc_ours_fast g nm vs L.

(** o before the rare path's saturation. *)
Definition o_ns (nm : numerics) (vs o : R) : R :=
  if n_fp8 nm then (if n_vl nm then o else rnd (o * vs)) else o.

Lemma o_fin_split : forall nm vs rare o,
  o_fin nm vs rare o = if andb rare (negb (n_fp8 nm)) then saturate (o_ns nm vs o) else o_ns nm vs o.
Proof. intros nm vs [] o; unfold o_fin, o_ns; destruct (n_fp8 nm), (n_vl nm); reflexivity. Qed.

Lemma up64_eq : forall x, fmtb x -> up64 x = x * bpow radix2 64.
Proof. intros x F. unfold up64. apply rnd_scale_up; [exact F|lia]. Qed.

Lemma down64_err : forall x, fmtb x -> Rabs (bpow radix2 64 * down64 x - x) <= eta64.
Proof.
  intros x F. unfold down64.
  pose proof (rnd_scale_down x 64 F ltac:(lia)) as H.
  set (y := x * bpow radix2 (-64)) in *.
  assert (E : x = bpow radix2 64 * y).
  { unfold y. rewrite (Rmult_comm x), <- Rmult_assoc, <- bpow_plus. simpl. ring. }
  replace (bpow radix2 64 * rnd y - x) with (bpow radix2 64 * (rnd y - y)) by (rewrite E; ring).
  rewrite Rabs_mult, (Rabs_pos_eq (bpow radix2 64)) by apply bpow_ge_0.
  rewrite <- eta64_eq, Rmult_comm. apply Rmult_le_compat_r; [apply bpow_ge_0|exact H].
Qed.

(** The rare path's chain of L <= Lb scaled terms: its absolute term, each eta scaled back
    by 2^64, within Lb eta64 (1 + u)^Lb. *)
Lemma eta64_chain : forall L Lb, INR L <= INR Lb ->
  bpow radix2 64 * INR L * eta * (1 + u) ^ Lb <= INR Lb * eta64 * (1 + u) ^ Lb.
Proof.
  intros L Lb H. rewrite <- eta64_eq. pose proof (pow1u_ge1 Lb). pose proof eta_pos.
  pose proof (bpow_ge_0 radix2 64).
  assert (0 <= eta * bpow radix2 64 * (1 + u) ^ Lb) by (apply Rmult_le_pos; [apply Rmult_le_pos|]; lra).
  assert (INR L * (eta * bpow radix2 64 * (1 + u) ^ Lb) <= INR Lb * (eta * bpow radix2 64 * (1 + u) ^ Lb))
    by (apply Rmult_le_compat_r; lra).
  lra.
Qed.

Lemma pow64_pos : 0 < bpow radix2 64. Proof. apply bpow_gt_0. Qed.

Lemma cdiv_mono : forall a a' b, (a <= a')%nat -> (cdiv a b <= cdiv a' b)%nat.
Proof.
  intros a a' b H. unfold cdiv. destruct b as [|b]; [simpl; lia|].
  apply Nat.div_le_mono; lia.
Qed.
Lemma ho_mono : forall g L L', (L <= L')%nat -> (ho g L <= ho g L')%nat.
Proof.
  intros g L L' H. unfold ho. pose proof (cdiv_mono _ _ (g_B g) H).
  pose proof (cdiv_mono _ _ (g_nw g) H0). nia.
Qed.
Lemma hs_mono : forall g L L', (L <= L')%nat -> (hs g L <= hs g L')%nat.
Proof. intros g L L' H. unfold hs. pose proof (cdiv_mono _ _ (g_T g) H). lia. Qed.

Theorem part_res : forall g nm vs L Lb e vr v V smin emax rare,
  geom_ok g -> (L <= Lb)%nat -> 0 <= emax ->
  (forall j, (j < L)%nat -> fmtb (e j) /\ 0 <= e j) -> (forall j, (j < L)%nat -> e j <= emax) ->
  (forall j, (j < L)%nat -> fmtb (vr j)) ->
  (forall j, (j < L)%nat -> v j = (if n_fp8 nm then vs else 1) * vr j) ->
  (forall j, (j < L)%nat -> Rabs (v j) <= V) -> 0 <= V ->
  0 < smin -> smin <= shat g L e -> (n_vl nm = true -> eps32 / smin < 1 /\ thv smin < 1) ->
  let c := pcs g nm vs Lb smin emax V rare in
  PartRes (o_ns nm vs (o_pre g nm vs L e vr rare)) (shat g L e) L e v
          (pc_aN c) (pc_bN c) (pc_eN c) (pc_th c) (pc_ze c).
Proof.
  intros g nm vs L Lb e vr v V smin emax rare Hg HLb Pemax He Hem Fvr Hv HV PV Psm Hsm Hvl c.
  pose proof (le_INR _ _ HLb) as HLbR. pose proof (ho_mono g _ _ HLb) as Hho.
  assert (Hgs : Sums.g (hs g L) <= Sums.g (hs g Lb)) by (apply g_mono, hs_mono, HLb).
  assert (Hg' := Hg). destruct Hg' as [Hvec [Hnw [Hvt Hw]]].
  assert (Ps : 0 < shat g L e) by lra.
  pose proof u_pos. pose proof eta_pos. pose proof eta64_pos. pose proof pow64_pos.
  assert (HBR : g_B g = (2 ^ g_lr g * g_vt g)%nat) by reflexivity.
  assert (HB : (0 < g_B g)%nat) by (rewrite HBR; pose proof (Nat.pow_nonzero 2 (g_lr g)); nia).
  assert (HoL : forall t, (ht t <= g_vt g * cdiv (cdiv L (g_B g)) (g_nw g) + g_lr g + (g_nw g - 1))%nat ->
                (ht t <= ho g Lb)%nat) by (intros t Ht; unfold ho in *; lia).
  pose proof (pow1u_mono _ _ Hho) as Pho. pose proof (pow1u_mono _ _ HLb) as PLb.
  pose proof (pow1u_ge1 (ho g L)). pose proof (pow1u_ge1 L). pose proof (pos_INR L).
  unfold c, pcs, o_ns, o_pre. destruct (n_vl nm) eqn:Evl.
  - (* vLLM *)
    destruct (Hvl eq_refl) as [Heps Hth].
    set (sc := n_s nm). set (pp := fun j => cvt sc (rnd (e j * inv_eps (shat g L e)))).
    assert (Hpp : forall j, (j < L)%nat -> pp j = cvt sc (rnd (e j * inv_eps (shat g L e))))
      by reflexivity.
    destruct (n_fp8 nm) eqn:Ef; destruct rare;
      unfold pc_vllm, rw_rare, zw_rare, rw_fast, zw_fast; rewrite Ef; simpl.
    + (* fp8, rare *)
      set (w := fun j => rnd (down64 (vr j) * vs)).
      destruct (chain_props L pp w) as [Xt [Mt [Nt [Ht Lt]]]].
      rewrite up64_eq by (apply cv_fmtb, Lt). rewrite Rmult_comm.
      assert (0 <= eta64 * (Rabs vs * (1 + u) + 1))
        by (assert (0 <= Rabs vs * (1 + u) + 1) by (pose proof (Rabs_pos vs); nra); nra).
      apply (part_vllm_gen g L e Hg He v V HV sc pp w (chain L pp w) (bpow radix2 64) u
               (eta64 * (Rabs vs * (1 + u) + 1)) Lb smin emax _ Lb (Sums.g (hs g Lb)));
        try solve [auto | lra | rewrite Nt; lia | rewrite Ht; lia].
      { apply eta64_chain; lra. }
      intros j Hj. unfold w. rewrite Hv by exact Hj.
        destruct (rnd_err (down64 (vr j) * vs)) as [d [e1 [Hd [He1 [_ E]]]]]. rewrite E.
        pose proof (down64_err (vr j) (Fvr j Hj)) as D.
        set (y := down64 (vr j)) in *.
        replace (bpow radix2 64 * (y * vs * (1 + d) + e1) - vs * vr j)
          with (vs * vr j * d + ((bpow radix2 64 * y - vr j) * vs * (1 + d) + bpow radix2 64 * e1)) by ring.
        eapply Rle_trans; [apply Rabs_triang|]. rewrite (Rabs_mult (vs * vr j) d).
        assert (Rabs (vs * vr j) * Rabs d <= u * Rabs (vs * vr j))
          by (rewrite Rmult_comm; apply Rmult_le_compat_r; [apply Rabs_pos|lra]).
        eapply Rle_trans; [apply Rplus_le_compat_l, Rabs_triang|].
        rewrite (Rabs_mult (bpow radix2 64) e1), (Rabs_mult ((bpow radix2 64 * y - vr j) * vs) (1 + d)),
          (Rabs_mult (bpow radix2 64 * y - vr j) vs), (Rabs_pos_eq (bpow radix2 64)) by lra.
        assert (Rabs (1 + d) <= 1 + u) by (apply Rabs_le; apply Rabs_le_inv in Hd; lra).
        assert (Rabs (bpow radix2 64 * y - vr j) * Rabs vs * Rabs (1 + d) <= eta64 * Rabs vs * (1 + u)).
        { apply Rmult_le_compat; try apply Rabs_pos; [apply Rmult_le_pos; apply Rabs_pos| |lra].
          apply Rmult_le_compat_r; [apply Rabs_pos|exact D]. }
        assert (bpow radix2 64 * Rabs e1 <= eta64) by (rewrite <- eta64_eq, Rmult_comm; apply Rmult_le_compat_r; lra).
        lra.
    + (* fp8, fast *)
      set (w := fun j => cvt sc (rnd (vr j * vs))).
      destruct (tree_o_props (g_lr g) (g_nw g) (g_B g) (g_vt g) L pp w Hnw HB HBR)
        as [Xt [Mt [Nt [Ht Lt]]]].
      rewrite <- (Rmult_1_l (cv _)).
      apply (part_vllm_gen g L e Hg He v V HV sc pp w _ 1 (rp sc) (zp sc) (ho g Lb) smin emax _ Lb (Sums.g (hs g Lb)));
        try solve [auto | lra | rewrite Nt; lia | apply rp_nonneg | apply zp_nonneg].
      { pose proof (pow1u_ge1 (ho g Lb)).
        assert (0 <= eta * (1 + u) ^ ho g Lb) by (apply Rmult_le_pos; lra).
        assert (INR L * (eta * (1 + u) ^ ho g Lb) <= INR Lb * (eta * (1 + u) ^ ho g Lb))
          by (apply Rmult_le_compat_r; lra).
        lra. }
      intros j Hj. unfold w. rewrite Rmult_1_l, Hv by exact Hj.
      rewrite (Rmult_comm vs). apply cvt_rnd_err.
    + (* scalar cache, rare *)
      set (w := fun j => down64 (vr j)).
      destruct (chain_props L pp w) as [Xt [Mt [Nt [Ht Lt]]]].
      rewrite up64_eq by (apply cv_fmtb, Lt). rewrite Rmult_comm.
      apply (part_vllm_gen g L e Hg He v V HV sc pp w (chain L pp w) (bpow radix2 64) 0 eta64 Lb smin emax _ Lb (Sums.g (hs g Lb)));
        try solve [auto | lra | rewrite Nt; lia | rewrite Ht; lia].
      { apply eta64_chain; lra. }
      intros j Hj. unfold w. rewrite Hv by exact Hj. rewrite Rmult_1_l, Rmult_0_l, Rplus_0_l.
      apply down64_err, Fvr, Hj.
    + (* scalar cache, fast *)
      destruct (tree_o_props (g_lr g) (g_nw g) (g_B g) (g_vt g) L pp (fun j => vr j) Hnw HB HBR)
        as [Xt [Mt [Nt [Ht Lt]]]].
      rewrite <- (Rmult_1_l (cv _)).
      apply (part_vllm_gen g L e Hg He v V HV sc pp (fun j => vr j) _ 1 0 0 (ho g Lb) smin emax _ Lb (Sums.g (hs g Lb)));
        try solve [auto | lra | rewrite Nt; lia].
      { pose proof (pow1u_ge1 (ho g Lb)).
        assert (0 <= eta * (1 + u) ^ ho g Lb) by (apply Rmult_le_pos; lra).
        assert (INR L * (eta * (1 + u) ^ ho g Lb) <= INR Lb * (eta * (1 + u) ^ ho g Lb))
          by (apply Rmult_le_compat_r; lra).
        lra. }
      intros j Hj. rewrite Hv by exact Hj. replace (1 * vr j - 1 * vr j) with 0 by ring.
      rewrite Rabs_R0. lra.
  - (* ours *)
    assert (Hsg : forall j, (j < L)%nat -> v j = (if n_fp8 nm then vs else 1) * vr j) by exact Hv.
    assert (Psg : 0 <= sgm nm vs) by (unfold sgm; destruct (n_fp8 nm); [apply Rabs_pos|lra]).
    destruct rare.
    + set (w := fun j => down64 (vr j)).
      destruct (chain_props L e w) as [Xt [Mt [Nt [Ht Lt]]]].
      assert (Eo : up64 (rnd (cv (chain L e w) / shat g L e))
                   = bpow radix2 64 * rnd (cv (chain L e w) / shat g L e))
        by (rewrite up64_eq by apply fmtb_rnd; ring).
      rewrite Eo.
      pose proof (part_ours_gen g L e He v (chain L e w) w vr (bpow radix2 64) eta64 Lb
                    (n_fp8 nm) vs _ Lt Xt Mt ltac:(lia) ltac:(lia) pow64_pos eta64_pos
                    ltac:(intros j Hj; apply down64_err, Fvr, Hj) Hsg Ps eq_refl) as R.
      cbv zeta in R. fold (sgm nm vs) in R. unfold pc_ours_rare. simpl.
      eapply PartRes_mono; [apply He| | | | | |exact R]; try (apply Rle_refl).
      * rewrite <- eta64_eq.
        assert (INR L * (1 + u) ^ Lb <= INR Lb * (1 + u) ^ Lb) by (apply Rmult_le_compat_r; lra).
        assert (0 <= sgm nm vs * bpow radix2 64 * eta) by (apply Rmult_le_pos; [apply Rmult_le_pos|]; lra).
        nra.
      * destruct (n_fp8 nm); rewrite <- eta64_eq; apply Req_le; ring.
    + destruct (tree_o_props (g_lr g) (g_nw g) (g_B g) (g_vt g) L e vr Hnw HB HBR)
        as [Xt [Mt [Nt [Ht Lt]]]].
      assert (Eo : rnd (cv (tree_o (g_lr g) (g_nw g) (g_B g) (g_vt g) L e vr) / shat g L e)
                   = 1 * rnd (cv (tree_o (g_lr g) (g_nw g) (g_B g) (g_vt g) L e vr) / shat g L e))
        by ring.
      rewrite Eo.
      pose proof (part_ours_gen g L e He v (tree_o (g_lr g) (g_nw g) (g_B g) (g_vt g) L e vr)
                    vr vr 1 0 (ho g Lb) (n_fp8 nm) vs _ Lt Xt Mt ltac:(apply HoL; exact Ht) ltac:(lia)
                    ltac:(lra) ltac:(lra)
                    ltac:(intros j Hj; replace (1 * vr j - vr j) with 0 by ring; rewrite Rabs_R0; lra)
                    Hsg Ps eq_refl) as R.
      cbv zeta in R. fold (sgm nm vs) in R. unfold pc_ours_fast. simpl.
      eapply PartRes_mono; [apply He| | | | | |exact R]; try (apply Rle_refl).
      * apply Req_le. ring.
      * assert (INR L * (1 + u) ^ ho g Lb <= INR Lb * (1 + u) ^ ho g Lb) by (apply Rmult_le_compat_r; nra).
        assert (0 <= sgm nm vs * eta) by nra. nra.
      * destruct (n_fp8 nm); apply Req_le; ring.
Qed.

(** * The rare path's saturation, as one more relative factor *)

Lemma saturate_scale : forall o Ob, Rabs o <= Ob -> 0 < Ob ->
  exists k, saturate o = o * k /\ Rmin 1 (flt_max / Ob) <= k <= 1.
Proof.
  intros o Ob Ho POb. pose proof flt_max_pos.
  assert (Mn : Rmin 1 (flt_max / Ob) <= 1) by apply Rmin_l.
  assert (Mn2 : forall a, 0 < a -> a <= Ob -> Rmin 1 (flt_max / Ob) <= flt_max / a).
  { intros a Pa Ha. eapply Rle_trans; [apply Rmin_r|]. unfold Rdiv.
    apply Rmult_le_compat_l; [lra|]. apply Rinv_le_contravar; lra. }
  unfold saturate.
  destruct (Rlt_dec flt_max o) as [H1|H1].
  - exists (flt_max / o). split; [field; lra|].
    rewrite Rabs_pos_eq in Ho by lra. split; [apply Mn2; lra|].
    apply (Rmult_le_reg_r o); [lra|]. unfold Rdiv. rewrite Rmult_assoc, Rinv_l by lra. lra.
  - destruct (Rlt_dec o (- flt_max)) as [H2|H2].
    + exists (flt_max / - o). split; [field; lra|].
      rewrite Rabs_left in Ho by lra. split; [apply Mn2; lra|].
      apply (Rmult_le_reg_r (- o)); [lra|]. unfold Rdiv. rewrite Rmult_assoc, Rinv_l by lra. lra.
    + exists 1. split; [ring|]. split; lra.
Qed.

Definition th_sat (th Ob : R) : R := Rmax th (1 - (1 - th) * Rmin 1 (flt_max / Ob)).

Lemma sat_partres : forall o s L e v aN bN eN th ze Ob,
  PartRes o s L e v aN bN eN th ze -> th < 1 -> Rabs o <= Ob -> 0 < Ob ->
  PartRes (saturate o) s L e v aN bN eN (th_sat th Ob) ze.
Proof.
  intros o s L e v aN bN eN th ze Ob [N [t [z [HN [Eo [Ht Hz]]]]]] Hth Ho POb.
  destruct (saturate_scale o Ob Ho POb) as [k [Ek Hk]].
  assert (Pk : 0 <= Rmin 1 (flt_max / Ob)).
  { apply Rmin_glb; [lra|]. pose proof flt_max_pos. apply Rmult_le_pos; [lra|left; apply Rinv_0_lt_compat; lra]. }
  exists N, ((1 + t) * k - 1), (z * k). split; [exact HN|]. split; [|split].
  - rewrite Ek, Eo. ring.
  - apply Rabs_le_inv in Ht. unfold th_sat. apply Rabs_le. split.
    + assert ((1 - th) * Rmin 1 (flt_max / Ob) <= (1 + t) * k) by (apply Rmult_le_compat; lra).
      pose proof (Rmax_r th (1 - (1 - th) * Rmin 1 (flt_max / Ob))). lra.
    + assert ((1 + t) * k <= (1 + th) * 1) by (apply Rmult_le_compat; lra).
      pose proof (Rmax_l th (1 - (1 - th) * Rmin 1 (flt_max / Ob))). lra.
  - rewrite Rabs_mult, (Rabs_pos_eq k) by lra.
    assert (Rabs z * k <= ze * 1) by (apply Rmult_le_compat; auto using Rabs_pos; lra). lra.
Qed.

(** |o| of a partition result, for the saturation's constant. *)
Definition o_bound (aN bN eN th ze V gs smin : R) : R :=
  (((1 + aN) * V + bN) / (1 - gs) + eN / smin) * (1 + th) + ze.

Lemma partres_bound : forall o s L e v aN bN eN th ze V gs smin,
  PartRes o s L e v aN bN eN th ze ->
  (forall j, (j < L)%nat -> 0 <= e j) -> (forall j, (j < L)%nat -> Rabs (v j) <= V) ->
  0 <= aN -> 0 <= bN -> 0 <= eN -> 0 <= V -> 0 <= gs < 1 -> 0 < smin -> smin <= s ->
  (1 - gs) * sumn e L <= s ->
  Rabs o <= o_bound aN bN eN th ze V gs smin.
Proof.
  intros o s L e v aN bN eN th ze V gs smin [N [t [z [HN [Eo [Ht Hz]]]]]]
    Pe HV HaN HbN HeN PV Hgs Psm Hsm Hs.
  set (SE := sumn e L) in *.
  assert (PSE : 0 <= SE) by (apply sumn_nonneg; intros; apply Pe; auto).
  assert (Hev : Rabs (sumn (fun j => e j * v j) L) <= V * SE).
  { eapply Rle_trans; [apply sumn_abs|]. unfold SE. rewrite <- sumn_scal. apply sumn_le.
    intros j Hj. rewrite Rabs_mult, (Rabs_pos_eq (e j)) by (apply Pe; auto).
    rewrite Rmult_comm. apply Rmult_le_compat_r; [apply Pe; auto|apply HV; auto]. }
  assert (Hev2 : sumn (fun j => e j * Rabs (v j)) L <= V * SE).
  { unfold SE. rewrite <- sumn_scal. apply sumn_le. intros j Hj.
    rewrite Rmult_comm. apply Rmult_le_compat_r; [apply Pe; auto|apply HV; auto]. }
  assert (HNb : Rabs N <= ((1 + aN) * V + bN) * SE + eN).
  { replace N with ((N - sumn (fun j => e j * v j) L) + sumn (fun j => e j * v j) L) by ring.
    eapply Rle_trans; [apply Rabs_triang|].
    assert (aN * sumn (fun j => e j * Rabs (v j)) L <= aN * (V * SE)) by (apply Rmult_le_compat_l; lra).
    lra. }
  assert (Ps : 0 < s) by lra.
  assert (Q : Rabs (N / s) <= ((1 + aN) * V + bN) / (1 - gs) + eN / smin).
  { unfold Rdiv. rewrite Rabs_mult, Rabs_inv, (Rabs_pos_eq s) by lra.
    apply Rle_trans with ((((1 + aN) * V + bN) * SE + eN) * / s).
    - apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat; lra|exact HNb].
    - rewrite Rmult_plus_distr_r. apply Rplus_le_compat.
      + destruct (Req_dec SE 0) as [Z|NZ].
        * rewrite Z, Rmult_0_r, Rmult_0_l.
          assert (0 <= (1 + aN) * V + bN) by nra.
          apply Rmult_le_pos; [lra|left; apply Rinv_0_lt_compat; lra].
        * assert (PSE' : 0 < SE) by lra.
          apply Rle_trans with (((1 + aN) * V + bN) * SE * / ((1 - gs) * SE)).
          -- assert (0 <= (1 + aN) * V + bN) by nra.
             apply Rmult_le_compat_l; [apply Rmult_le_pos; lra|].
             apply Rinv_le_contravar; [apply Rmult_lt_0_compat; lra|lra].
          -- right. field. split; lra.
      + apply Rmult_le_compat_l; [lra|]. apply Rinv_le_contravar; lra. }
  rewrite Eo. unfold o_bound.
  eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult.
  assert (Rabs (1 + t) <= 1 + th) by (apply Rabs_le; apply Rabs_le_inv in Ht; lra).
  assert (Rabs (N / s) * Rabs (1 + t) <= (((1 + aN) * V + bN) / (1 - gs) + eN / smin) * (1 + th))
    by (apply Rmult_le_compat; auto using Rabs_pos).
  lra.
Qed.

(** * The P.V rare path is not taken when no partial can reach FLT_MAX / NUM_WARPS *)

Lemma pv_no_flag : forall g L pp Vk pm, geom_ok g ->
  (forall j, (j < L)%nat -> Rabs (pp j) <= pm) -> 0 <= pm -> 0 <= Vk ->
  (1 + u) ^ ho g L * (INR L * (pm * Vk + eta)) <= flt_max / INR (g_nw g) ->
  ~ pv_flag g L pp Vk.
Proof.
  intros g L pp Vk pm Hg Hpp Ppm PVk Hpre [w [s [Hw [Hs Hgt]]]].
  destruct Hg as [Hvec [Hnw [Hvt HW]]].
  assert (HBR : g_B g = (2 ^ g_lr g * g_vt g)%nat) by reflexivity.
  assert (HB : (0 < g_B g)%nat) by (rewrite HBR; pose proof (Nat.pow_nonzero 2 (g_lr g)); nia).
  destruct (tree_o_props (g_lr g) (g_nw g) (g_B g) (g_vt g) L pp w Hnw HB HBR) as [Xt [Mt [Nt [Ht Lt]]]].
  pose proof (sub_bound _ _ Hs Lt) as Sb. rewrite Mt, Nt in Sb.
  pose proof u_pos. pose proof eta_pos.
  assert (Hh : (ht (tree_o (g_lr g) (g_nw g) (g_B g) (g_vt g) L pp w) <= ho g L)%nat) by (unfold ho; lia).
  pose proof (pow1u_mono _ _ Hh). pose proof (pow1u_ge1 (ht (tree_o (g_lr g) (g_nw g) (g_B g) (g_vt g) L pp w))).
  assert (M : sumn (fun i => Rabs (pp i * w i)) L <= INR L * (pm * Vk)).
  { apply sumn_le_max. intros j Hj. rewrite Rabs_mult.
    apply Rmult_le_compat; auto using Rabs_pos. }
  assert (0 <= sumn (fun i => Rabs (pp i * w i)) L) by (apply sumn_nonneg; intros; apply Rabs_pos).
  pose proof (pos_INR L).
  assert (Rabs (cv s) <= (1 + u) ^ ho g L * (INR L * (pm * Vk + eta))).
  { eapply Rle_trans; [exact Sb|]. apply Rmult_le_compat; try lra. nra. }
  lra.
Qed.

(** The probabilities the P.V trees read, bounded. *)
Definition pmax_v (sc : sfmt) (smin emax : R) : R :=
  (1 + rp sc) * (emax * ((1 + thv smin) / smin + eta)) + zp sc.

Lemma probs_bound : forall g nm L e smin emax, geom_ok g ->
  (forall j, (j < L)%nat -> fmtb (e j) /\ 0 <= e j) -> (forall j, (j < L)%nat -> e j <= emax) ->
  0 < smin -> smin <= shat g L e -> (n_vl nm = true -> eps32 / smin < 1) ->
  forall j, (j < L)%nat ->
  Rabs (probs g nm L e j) <= (if n_vl nm then pmax_v (n_s nm) smin emax else emax).
Proof.
  intros g nm L e smin emax Hg He Hem Psm Hsm Heps j Hj.
  unfold probs. destruct (n_vl nm).
  - specialize (Heps eq_refl). pose proof (shat_fmtb g L e Hg He) as Fs.
    destruct (inv_eps_err _ smin Fs Psm Hsm Heps) as [th [e2 [Ei [Hth He2]]]].
    pose proof (cvt_rnd_err (n_s nm) (e j * inv_eps (shat g L e))) as C.
    pose proof (rp_nonneg (n_s nm)). pose proof (zp_nonneg (n_s nm)). pose proof eta_pos.
    destruct (He j Hj) as [_ Pe]. pose proof (Hem j Hj).
    assert (Hi : Rabs (inv_eps (shat g L e)) <= (1 + thv smin) / smin + eta).
    { rewrite Ei. eapply Rle_trans; [apply Rabs_triang|]. apply Rplus_le_compat; [|exact He2].
      unfold Rdiv. rewrite Rabs_mult, Rabs_inv, (Rabs_pos_eq (shat g L e)) by lra.
      apply Rmult_le_compat; auto using Rabs_pos; [left; apply Rinv_0_lt_compat; lra| |].
      - apply Rabs_le_inv in Hth. apply Rabs_le. lra.
      - apply Rinv_le_contravar; lra. }
    assert (Rabs (e j * inv_eps (shat g L e)) <= emax * ((1 + thv smin) / smin + eta)).
    { rewrite Rabs_mult, (Rabs_pos_eq (e j)) by lra. apply Rmult_le_compat; auto using Rabs_pos. }
    unfold pmax_v.
    replace (cvt (n_s nm) (rnd (e j * inv_eps (shat g L e))))
      with ((cvt (n_s nm) (rnd (e j * inv_eps (shat g L e))) - e j * inv_eps (shat g L e))
            + e j * inv_eps (shat g L e)) by ring.
    eapply Rle_trans; [apply Rabs_triang|].
    assert (rp (n_s nm) * Rabs (e j * inv_eps (shat g L e)) <= rp (n_s nm) * (emax * ((1 + thv smin) / smin + eta)))
      by (apply Rmult_le_compat_l; lra).
    lra.
  - destruct (He j Hj) as [_ Pe]. rewrite Rabs_pos_eq by lra. apply Hem; auto.
Qed.
