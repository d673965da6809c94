(** One (sequence, head) row of the kernels: the exact quantities (logits, softmax, y), the
    magnitudes the bound takes as upper bounds, and the step from each token's computed
    weight to the assembly of Kernel.v. *)
From Coq Require Import Reals List Lra Lia.
From Flocq Require Import Core.
From PagedAttn Require Import Fp Sums Err Compose Model Logit Weights Part PartK Bound Kernel.
Open Scope R_scope.

(** * A canonical split of an error into a relative and an absolute part (no choice) *)

Definition tauf (W B T : R) : R :=
  if Rle_dec (Rabs (W - B)) (T * B) then (W - B) / B
  else if Rle_dec 0 (W - B) then T else - T.
Definition zf (W B T : R) : R := W - B * (1 + tauf W B T).

Lemma split_fun : forall W B T Z, 0 < B -> 0 <= T -> 0 <= Z -> Rabs (W - B) <= T * B + Z ->
  W = B * (1 + tauf W B T) + zf W B T /\ Rabs (tauf W B T) <= T /\ Rabs (zf W B T) <= Z.
Proof.
  intros W B T Z PB PT PZ H. split; [unfold zf; ring|]. unfold zf, tauf.
  destruct (Rle_dec (Rabs (W - B)) (T * B)) as [S|S].
  - split.
    + unfold Rdiv. rewrite Rabs_mult, Rabs_inv, (Rabs_pos_eq B) by lra.
      apply (Rmult_le_reg_r B); [lra|]. rewrite Rmult_assoc, Rinv_l by lra. lra.
    + replace (W - B * (1 + (W - B) / B)) with 0 by (field; lra). rewrite Rabs_R0. lra.
  - destruct (Rle_dec 0 (W - B)) as [Q|Q].
    + rewrite Rabs_pos_eq in S, H by lra. split; [rewrite Rabs_pos_eq; lra|].
      rewrite Rabs_pos_eq by nra. nra.
    + rewrite Rabs_left in S, H by lra. split; [rewrite Rabs_Ropp, Rabs_pos_eq; lra|].
      rewrite Rabs_left1 by nra. nra.
Qed.

(** A weight W = a (1 + tau) + z against a > 0: the step from each token's weight to the
    bound's T a + Z (V1.v, V2.v). *)
Lemma weight_dev : forall a tau z T Z, 0 < a -> Rabs tau <= T -> Rabs z <= Z ->
  Rabs (a * (1 + tau) + z - a) <= T * a + Z.
Proof.
  intros a tau z T Z Ha Ht Hz.
  replace (a * (1 + tau) + z - a) with (a * tau + z) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult, (Rabs_pos_eq a) by lra.
  assert (a * Rabs tau <= a * T) by (apply Rmult_le_compat_l; lra). lra.
Qed.

(** * Maxima *)

Lemma mx_ge : forall x k j, (j <= k)%nat -> x j <= mx x k.
Proof.
  intros x k. induction k as [|k IH]; intros j Hj; simpl.
  - replace j with O by lia. lra.
  - destruct (Nat.eq_dec j (S k)) as [->|N]; [apply Rmax_r|].
    eapply Rle_trans; [apply IH; lia|apply Rmax_l].
Qed.

Lemma mx_att : forall x k, exists j, (j <= k)%nat /\ mx x k = x j.
Proof.
  intros x k. induction k as [|k [j [Hj E]]]; simpl; [exists O; split; [lia|reflexivity]|].
  unfold Rmax. destruct (Rle_dec (mx x k) (x (S k))).
  - exists (S k). split; [lia|reflexivity].
  - exists j. split; [lia|exact E].
Qed.

Lemma pmax_ge : forall L x j, (j < L)%nat -> x j <= pmax L x.
Proof. intros L x j Hj. unfold pmax. apply mx_ge. lia. Qed.

Lemma pmax_att : forall L x, (1 <= L)%nat -> exists j, (j < L)%nat /\ pmax L x = x j.
Proof.
  intros L x HL. unfold pmax. destruct (mx_att x (L - 1)) as [j [Hj E]].
  exists j. split; [lia|exact E].
Qed.

Lemma pmax_fmtb : forall L x, (1 <= L)%nat -> (forall j, (j < L)%nat -> fmtb (x j)) -> fmtb (pmax L x).
Proof.
  intros L x HL F. destruct (pmax_att L x HL) as [j [Hj ->]]. apply F, Hj.
Qed.

Lemma ehat_eq : forall fe L x j, fmtb (fe (rnd (x j - pmax L x))) ->
  ehat fe L x j = fe (rnd (x j - pmax L x)).
Proof. intros fe L x j F. unfold ehat. rewrite Rmult_1_l. apply rnd_generic, F. Qed.

Lemma sum2_ge_term : forall P L f p0 j0, (p0 < P)%nat -> (j0 < L p0)%nat ->
  (forall p j, (p < P)%nat -> (j < L p)%nat -> 0 <= f p j) -> f p0 j0 <= sum2 P L f.
Proof.
  intros P L f p0 j0 Hp Hj Hf. unfold sum2.
  assert (A : forall g n k, (k < n)%nat -> (forall i, (i < n)%nat -> 0 <= g i) -> g k <= sumn g n).
  { intros g n. induction n as [|n IH]; intros k Hk Hg; [lia|]. simpl.
    destruct (Nat.eq_dec k n) as [->|N].
    - pose proof (sumn_nonneg g n ltac:(intros; apply Hg; lia)). lra.
    - pose proof (Hg n ltac:(lia)). pose proof (IH k ltac:(lia) ltac:(intros; apply Hg; lia)). lra. }
  eapply Rle_trans; [apply (A (f p0) (L p0) j0 Hj); intros; apply Hf; auto|].
  apply (A (fun p => sumn (f p) (L p)) P p0 Hp). intros. apply sumn_nonneg. intros. apply Hf; auto.
Qed.

Lemma sum2_one : forall L f, sum2 1 L f = sumn (f O) (L O).
Proof. intros L f. unfold sum2. simpl. ring. Qed.

(** * The row *)

Section Row.
Variables (c : kcfg) (rw : krow) (el : kel).
Variables (q : nat -> R) (kr : nat -> nat -> nat -> R) (slope : R) (pos : nat -> nat -> R).
Variables (vr : nat -> nat -> R) (P : nat) (Lp : nat -> nat) (xm : R).

Definition g0 := k_g c.
Definition nm0 := k_nm c.

Definition xh (p j : nat) : R := logit_hat g0 nm0 (k_sc c) (k_ks c) q (kr p j) slope (pos p j).
Definition xx (p j : nat) : R := logit_exact g0 nm0 (k_sc c) (k_ks c) q (kr p j) slope (pos p j).
Definition vv (p j : nat) : R := (if n_fp8 nm0 then k_vs c else 1) * vr p j.
Definition QQ (p j : nat) : R := Qmag g0 nm0 (k_sc c) (k_ks c) q (kr p j).
Definition Zs : R := sum2 P Lp (fun p j => exp (xx p j)).
Definition pp (p j : nat) : R := exp (xx p j) / Zs.
Definition yy : R := sum2 P Lp (fun p j => pp p j * vv p j).

(** The magnitudes the bound takes, as upper bounds of the exact ones (what
    exact_magnitudes computes, proofs/bound/src/magnitudes.cpp). *)
Definition mags_ok : Prop :=
  (forall p j, (p < P)%nat -> (j < Lp p)%nat ->
     QQ p j <= r_Qm rw /\ Rabs (xx p j) <= r_X rw /\ Rabs (vv p j) <= r_V rw /\
     xx p j <= xm /\ xm - xx p j <= r_spread rw) /\
  (exists p j, (p < P)%nat /\ (j < Lp p)%nat /\ xx p j = xm) /\
  sumn (fun d => Rabs (q d)) (g_D g0) <= r_Sq rw /\
  sum2 P Lp (fun p j => pp p j * QQ p j) <= r_pqk rw /\
  sum2 P Lp (fun p j => pp p j * Rabs (xx p j)) <= r_px rw /\
  sum2 P Lp (fun p j => pp p j * (xm - xx p j)) <= r_pgap rw /\
  sum2 P Lp (fun p j => pp p j * Rabs (vv p j)) <= e_A el /\
  sum2 P Lp (fun p j => pp p j * Rabs (vv p j - yy)) <= e_dev el /\
  sum2 P Lp (fun p j => pp p j * Rabs (vv p j - yy) * (xm - xx p j)) <= e_dgap el /\
  sum2 P Lp (fun p j => pp p j * Rabs (vv p j - yy) * QQ p j) <= e_dqk el /\
  sum2 P Lp (fun p j => pp p j * Rabs (vv p j - yy) * Rabs (xx p j)) <= e_dx el /\
  Rabs yy <= e_Y el /\
  INR (r_n rw) = ntok P Lp.

Hypothesis Hmags : mags_ok.
Hypothesis HP : (1 <= P)%nat.
Hypothesis HLp : forall p, (p < P)%nat -> (1 <= Lp p)%nat.

Lemma Zs_pos : 0 < Zs.
Proof.
  destruct Hmags as [_ [[p0 [j0 [Hp0 [Hj0 _]]]] _]].
  unfold Zs. eapply Rlt_le_trans; [apply (exp_pos (xx p0 j0))|].
  apply (sum2_ge_term P Lp (fun p j => exp (xx p j)) p0 j0 Hp0 Hj0).
  intros. left. apply exp_pos.
Qed.

Lemma pp_nonneg : forall p j, (p < P)%nat -> (j < Lp p)%nat -> 0 <= pp p j.
Proof.
  intros. unfold pp. apply Rmult_le_pos; [left; apply exp_pos|left; apply Rinv_0_lt_compat, Zs_pos].
Qed.

Lemma pp_sum : sum2 P Lp pp = 1.
Proof.
  pose proof Zs_pos. unfold pp.
  rewrite (sum2_ext _ _ _ (fun p j => / Zs * exp (xx p j))) by (intros; unfold Rdiv; ring).
  rewrite sum2_scal. fold Zs. field. lra.
Qed.

(** The per-token bound T of lemma 4.7 (4.6), capped at T_max. *)
Definition TT (p j : nat) : R :=
  Rmin (b_kc c rw * (b_cqk c * QQ p j + u * Rabs (xx p j) + b_cgap c rw * (xm - xx p j) + b_c0 c rw))
       (b_Tm c rw).

(** * Nonnegativity of the coefficients *)

Hypothesis Ha : 0 <= k_a c.
Hypothesis Hb : 0 <= k_b c.

Lemma row_nonneg : 0 <= r_Qm rw /\ 0 <= r_X rw /\ 0 <= r_V rw /\ 0 <= r_spread rw.
Proof.
  destruct Hmags as [Hall [[p0 [j0 [Hp0 [Hj0 Ex]]]] _]].
  destruct (Hall p0 j0 Hp0 Hj0) as [HQ [HX [HV [Hx Hs]]]].
  assert (0 <= QQ p0 j0).
  { unfold QQ, Qmag. apply Rmult_le_pos; [apply Rabs_pos|apply sumn_nonneg; intros; apply Rabs_pos]. }
  repeat split; try lra; [pose proof (Rabs_pos (xx p0 j0)); lra|pose proof (Rabs_pos (vv p0 j0)); lra].
Qed.

Lemma coefs_nonneg :
  0 <= b_gdot c /\ 0 <= b_etaq c rw /\ 0 <= b_xi c rw /\ 0 <= b_tmax c rw /\
  0 <= b_alpha c /\ 0 <= b_beta c /\ 0 <= b_em c rw /\ 0 <= b_m0 c rw /\ 0 <= b_m1 c rw /\
  0 <= b_mum c rw /\ 0 <= b_phm c rw /\ 0 <= b_kc c rw /\ 0 <= b_cqk c /\ 0 <= b_cgap c rw /\
  0 <= b_c0 c rw /\ 0 <= b_Tm c rw.
Proof.
  destruct row_nonneg as [PQ [PX [PV Psp]]].
  pose proof u_pos. pose proof eta_pos.
  pose proof (lg_uq_nonneg (k_nm c) (k_sc c) (k_ks c)). pose proof (lg_rk_nonneg (k_nm c)).
  pose proof (lg_ek_nonneg (k_nm c)). pose proof (pow1u_ge1 (hdot (k_g c))).
  assert (G : 0 <= b_gdot c).
  { unfold b_gdot, gdot.
    assert (1 <= (1 + lg_uq (k_nm c) (k_sc c) (k_ks c)) * (1 + u)) by nra.
    assert (1 <= (1 + lg_uq (k_nm c) (k_sc c) (k_ks c)) * (1 + u) * (1 + u) ^ hdot (k_g c)) by nra.
    nra. }
  assert (E : 0 <= b_etaq c rw).
  { unfold b_etaq, eta_q, eta_q0.
    assert (0 <= (1 + u) ^ hdot (k_g c) * lg_ek (k_nm c) * r_Sq rw).
    { destruct Hmags as [_ [_ [HSq _]]].
      assert (0 <= r_Sq rw) by (eapply Rle_trans; [|exact HSq]; apply sumn_nonneg; intros; apply Rabs_pos).
      apply Rmult_le_pos; [apply Rmult_le_pos|]; lra. }
    assert (0 <= INR (g_D (k_g c)) * eta * (1 + u) ^ hdot (k_g c))
      by (apply Rmult_le_pos; [apply Rmult_le_pos; [apply pos_INR|]|]; lra).
    assert (0 <= (1 + lg_uq (k_nm c) (k_sc c) (k_ks c)) * (1 + u) * Rabs (lg_c (k_nm c) (k_sc c) (k_ks c)))
      by (apply Rmult_le_pos; [nra|apply Rabs_pos]).
    set (A1 := (1 + u) ^ hdot (k_g c) * lg_ek (k_nm c) * r_Sq rw) in *.
    set (B1 := INR (g_D (k_g c)) * eta * (1 + u) ^ hdot (k_g c)) in *.
    set (C1 := (1 + lg_uq (k_nm c) (k_sc c) (k_ks c)) * (1 + u) * Rabs (lg_c (k_nm c) (k_sc c) (k_ks c))) in *.
    assert (0 <= C1 * (A1 + B1)) by (apply Rmult_le_pos; lra).
    assert (0 <= (1 + u) * (C1 * (A1 + B1) + eta)) by (apply Rmult_le_pos; lra).
    lra. }
  assert (X : 0 <= b_xi c rw).
  { unfold b_xi. assert (0 <= b_gdot c * (1 + u) * r_Qm rw) by (apply Rmult_le_pos; [nra|lra]). nra. }
  assert (Tm : 0 <= b_tmax c rw) by (unfold b_tmax; lra).
  assert (Al : 0 <= b_alpha c) by (unfold b_alpha; nra).
  assert (Be : 0 <= b_beta c) by (unfold b_beta; nra).
  assert (Em : 0 <= b_em c rw).
  { unfold b_em, Emax. assert (0 <= b_beta c * b_tmax c rw * (1 + u)) by (apply Rmult_le_pos; [nra|lra]). lra. }
  assert (M0 : 0 <= b_m0 c rw).
  { unfold b_m0. destruct (k_v2 c); unfold m0_2, m0_1; [|lra]. fold (b_em c rw).
    assert (0 <= 2 * b_alpha c * (1 + b_em c rw) * (1 + u)) by (apply Rmult_le_pos; [apply Rmult_le_pos|]; lra).
    lra. }
  assert (M1 : 0 <= b_m1 c rw).
  { unfold b_m1. destruct (k_v2 c); unfold m1_2, m1_1; [|nra]. fold (b_em c rw).
    apply Rmult_le_pos; [apply Rmult_le_pos; [nra|lra]|lra]. }
  assert (Mu : 0 <= b_mum c rw) by (unfold b_mum; nra).
  assert (Ph : 0 <= b_phm c rw) by (unfold b_phm; assert (0 <= u * b_tmax c rw * (1 + u)) by (apply Rmult_le_pos; nra); lra).
  assert (K : 0 <= b_kc c rw) by (unfold b_kc, Kc; pose proof (exp_pos (b_phm c rw)); nra).
  assert (Cq : 0 <= b_cqk c) by (unfold b_cqk; nra).
  assert (Cg : 0 <= b_cgap c rw) by (unfold b_cgap; nra).
  assert (C0 : 0 <= b_c0 c rw) by (unfold b_c0; nra).
  assert (T : 0 <= b_Tm c rw) by (unfold b_Tm; nra).
  repeat split; assumption.
Qed.

(** * From the tokens' weights to the bound *)

Variables (W : nat -> nat -> R) (M : R) (Nh Dh o : R).
Hypothesis HWp : forall p j, (p < P)%nat -> (j < Lp p)%nat -> 0 <= W p j.
Hypothesis HWb : forall p j, (p < P)%nat -> (j < Lp p)%nat ->
  Rabs (W p j - exp (xx p j - M)) <= TT p j * exp (xx p j - M) + b_Z c rw.
Hypothesis HM : M <= xm + b_xi c rw.
Hypothesis HZ : 0 <= b_Z c rw.
Hypothesis Hd0 : 0 < b_d0 c rw.
Hypothesis HN : Rabs (Nh - sum2 P Lp (fun i j => W i j * vv i j))
  <= b_aN c rw * sum2 P Lp (fun i j => W i j * Rabs (vv i j)) + b_bN c rw * sum2 P Lp W + b_eN c rw.
Hypothesis HD : Rabs (Dh - sum2 P Lp W) <= b_aD c rw * sum2 P Lp W.
Hypothesis Ho : exists th' ze', o = Nh / Dh * (1 + th') + ze' /\ Rabs th' <= b_th c rw /\ Rabs ze' <= b_ze c rw.
Hypothesis Hcoef : 0 <= b_aN c rw /\ 0 <= b_bN c rw /\ 0 <= b_eN c rw /\ 0 <= b_aD c rw < 1 /\ 0 <= b_th c rw.

Theorem row_assemble : Rabs (o - yy) <= b_E32 c rw el.
Proof.
  destruct Hmags as [Hall [Hatt [HSq [Hpqk [Hpx [Hpgap [HA [Hdev [Hdgap [Hdqk [Hdx [HY Hn]]]]]]]]]]]].
  destruct coefs_nonneg as [PG [PE [PX [PT [PA [PB [PEm [PM0 [PM1 [PMu [PPh [PK [PCq [PCg [PC0 PTm]]]]]]]]]]]]]]].
  pose proof Zs_pos as PZs.
  set (K := exp (- M) * Zs).
  assert (EK : forall p j, exp (xx p j - M) = K * pp p j).
  { intros p j. unfold K, pp. unfold Rminus. rewrite exp_plus. field. lra. }
  assert (HK : exp (- b_xi c rw) <= K).
  { destruct Hatt as [p0 [j0 [Hp0 [Hj0 Ex]]]].
    apply Rle_trans with (exp (xx p0 j0 - M)).
    - apply exp_mono. rewrite Ex. lra.
    - unfold K. replace (exp (xx p0 j0 - M)) with (exp (- M) * exp (xx p0 j0))
        by (unfold Rminus; rewrite exp_plus; ring).
      apply Rmult_le_compat_l; [left; apply exp_pos|]. unfold Zs.
      apply (sum2_ge_term P Lp (fun p j => exp (xx p j)) p0 j0 Hp0 Hj0). intros; left; apply exp_pos. }
  assert (PK' : 0 < K) by (unfold K; apply Rmult_lt_0_compat; [apply exp_pos|exact PZs]).
  set (tau := fun p j => tauf (W p j) (exp (xx p j - M)) (TT p j)).
  set (z := fun p j => zf (W p j) (exp (xx p j - M)) (TT p j)).
  assert (Qn : forall p j, 0 <= QQ p j).
  { intros p j. unfold QQ, Qmag. apply Rmult_le_pos; [apply Rabs_pos|apply sumn_nonneg; intros; apply Rabs_pos]. }
  set (TA := fun p j => b_kc c rw * (b_cqk c * QQ p j + u * Rabs (xx p j) + b_cgap c rw * (xm - xx p j) + b_c0 c rw)).
  assert (PTA : forall p j, (p < P)%nat -> (j < Lp p)%nat -> 0 <= TA p j).
  { intros p j Hp Hj. destruct (Hall p j Hp Hj) as [_ [_ [_ [Hx _]]]]. unfold TA.
    pose proof (Qn p j). pose proof (Rabs_pos (xx p j)). pose proof u_pos.
    apply Rmult_le_pos; [lra|].
    assert (0 <= b_cqk c * QQ p j) by (apply Rmult_le_pos; lra).
    assert (0 <= u * Rabs (xx p j)) by (apply Rmult_le_pos; lra).
    assert (0 <= b_cgap c rw * (xm - xx p j)) by (apply Rmult_le_pos; lra).
    lra. }
  assert (PTT : forall p j, (p < P)%nat -> (j < Lp p)%nat -> 0 <= TT p j).
  { intros p j Hp Hj. unfold TT. apply Rmin_glb; [apply PTA; auto|exact PTm]. }
  assert (SF : forall p j, (p < P)%nat -> (j < Lp p)%nat ->
            W p j = exp (xx p j - M) * (1 + tau p j) + z p j /\ Rabs (tau p j) <= TT p j /\ Rabs (z p j) <= b_Z c rw).
  { intros p j Hp Hj. apply split_fun; [apply exp_pos|apply PTT; auto|exact HZ|apply HWb; auto]. }
  assert (Hyv : Rabs yy <= sum2 P Lp (fun p j => pp p j * Rabs (vv p j))).
  { unfold yy. eapply Rle_trans; [apply sum2_abs|]. apply sum2_le. intros p j Hp Hj.
    rewrite Rabs_mult, (Rabs_pos_eq (pp p j)) by (apply pp_nonneg; auto). lra. }
  assert (HYm : Rabs yy <= b_Y el) by (unfold b_Y; apply Rmin_glb; lra).
  assert (HST : sum2 P Lp (fun p j => pp p j * TT p j) <= b_ST c rw).
  { apply Rle_trans with (sum2 P Lp (fun p j => pp p j * TA p j)).
    - apply sum2_le. intros p j Hp Hj. apply Rmult_le_compat_l; [apply pp_nonneg; auto|apply Rmin_l].
    - unfold TA, b_ST.
      rewrite (sum2_ext _ _ _ (fun p j => b_kc c rw * (b_cqk c * (pp p j * QQ p j)
                  + u * (pp p j * Rabs (xx p j)) + b_cgap c rw * (pp p j * (xm - xx p j)) + b_c0 c rw * pp p j)))
        by (intros; ring).
      rewrite sum2_scal, !sum2_plus, !sum2_scal, pp_sum.
      apply Rmult_le_compat_l; [exact PK|].
      assert (b_cqk c * sum2 P Lp (fun p j => pp p j * QQ p j) <= b_cqk c * r_pqk rw) by (apply Rmult_le_compat_l; lra).
      assert (u * sum2 P Lp (fun p j => pp p j * Rabs (xx p j)) <= u * r_px rw) by (apply Rmult_le_compat_l; [apply u_pos|lra]).
      assert (b_cgap c rw * sum2 P Lp (fun p j => pp p j * (xm - xx p j)) <= b_cgap c rw * r_pgap rw) by (apply Rmult_le_compat_l; lra).
      lra. }
  assert (HSA : sum2 P Lp (fun p j => pp p j * TT p j * Rabs (vv p j - yy)) <= b_SA c rw el).
  { apply Rle_trans with (sum2 P Lp (fun p j => pp p j * TA p j * Rabs (vv p j - yy))).
    - apply sum2_le. intros p j Hp Hj. apply Rmult_le_compat_r; [apply Rabs_pos|].
      apply Rmult_le_compat_l; [apply pp_nonneg; auto|apply Rmin_l].
    - unfold TA, b_SA.
      rewrite (sum2_ext _ _ _ (fun p j => b_kc c rw * (b_cqk c * (pp p j * Rabs (vv p j - yy) * QQ p j)
                  + u * (pp p j * Rabs (vv p j - yy) * Rabs (xx p j))
                  + b_cgap c rw * (pp p j * Rabs (vv p j - yy) * (xm - xx p j))
                  + b_c0 c rw * (pp p j * Rabs (vv p j - yy)))))
        by (intros; ring).
      rewrite sum2_scal, !sum2_plus, !sum2_scal.
      apply Rmult_le_compat_l; [exact PK|].
      assert (b_cqk c * sum2 P Lp (fun p j => pp p j * Rabs (vv p j - yy) * QQ p j) <= b_cqk c * e_dqk el) by (apply Rmult_le_compat_l; lra).
      assert (u * sum2 P Lp (fun p j => pp p j * Rabs (vv p j - yy) * Rabs (xx p j)) <= u * e_dx el) by (apply Rmult_le_compat_l; [apply u_pos|lra]).
      assert (b_cgap c rw * sum2 P Lp (fun p j => pp p j * Rabs (vv p j - yy) * (xm - xx p j)) <= b_cgap c rw * e_dgap el) by (apply Rmult_le_compat_l; lra).
      assert (b_c0 c rw * sum2 P Lp (fun p j => pp p j * Rabs (vv p j - yy)) <= b_c0 c rw * e_dev el) by (apply Rmult_le_compat_l; lra).
      lra. }
  assert (Hd0' : 0 < 1 - b_ST c rw - ntok P Lp * (b_Z c rw * exp (b_xi c rw))).
  { rewrite <- Hn. exact Hd0. }
  pose proof (assemble P Lp pp vv W tau z TT K (b_Z c rw) (b_Tm c rw) (r_V rw) yy (e_A el) (b_Y el)
    (b_ST c rw) (b_SA c rw el) (b_xi c rw) Nh Dh o (b_aN c rw) (b_bN c rw) (b_eN c rw) (b_aD c rw)
    (b_th c rw) (b_ze c rw)
    pp_nonneg pp_sum eq_refl HA HYm HK
    ltac:(intros p j Hp Hj; destruct (SF p j Hp Hj) as [E _]; rewrite E, EK; reflexivity)
    HWp
    ltac:(intros p j Hp Hj; apply (SF p j Hp Hj))
    ltac:(intros p j Hp Hj; apply Rmin_r) PTm
    ltac:(intros p j Hp Hj; apply (SF p j Hp Hj)) HZ
    ltac:(intros p j Hp Hj; apply (Hall p j Hp Hj))
    HST HSA Hd0' HN HD Ho Hcoef) as AS.
  cbv zeta in AS. rewrite <- Hn in AS.
  unfold b_E32, b_Es, b_Yq, b_Esm, b_Aq, b_SWmin, b_d0, b_Zk. exact AS.
Qed.

End Row.
