(** Section 4 of proofs/error_bound.md: one token's weight as the kernels compute it,
    against exp(x - M) with x its exact logit and M the computed max it is measured from:
      computed weight = exp(x - M) (1 + tau) + z,
    tau from the logit's error, the rounded subtractions and the exp (4.2)-(4.5), z from an
    exp flushed to zero or a product below the normal range. V1: e = exp_fn(rnd(x_hat - m)).
    V2: the token's weight in the reduce is e times w_p / s_p, w_p = rnd(s_p c_p),
    c_p = exp_fn(rnd(m_p - M)) (the partition's exp-sum s_p cancels, section 5). *)
From Coq Require Import Reals Lra Lia.
From Flocq Require Import Core.
From PagedAttn Require Import Fp Err Compose.
Open Scope R_scope.

(** The exp model: on every float argument t <= 0 the kernel's exp returns a float
    E >= 0 with |E - e^t| <= (alpha + beta |t|) e^t + ee: alpha = 2u a, beta = 2u b for an
    exp within a + b|t| ulps of 2^-23 e^t (CUDA's __expf: a = 2, b = 1.173), ee = 2^-126
    for a result flushed to zero (ex2.approx.ftz). *)
Definition exp_ok (fe : R -> R) (alpha beta ee : R) : Prop :=
  forall t, t <= 0 -> fmtb (fe t) /\ 0 <= fe t /\
    Rabs (fe t - exp t) <= (alpha + beta * Rabs t) * exp t + ee.

Definition Emax (alpha beta tmax : R) : R := alpha + beta * tmax * (1 + u).
Definition m0_1 (alpha : R) : R := alpha.
Definition m1_1 (beta : R) : R := beta * (1 + u).
Definition m0_2 (alpha beta tmax : R) : R := 2 * alpha * (1 + Emax alpha beta tmax) * (1 + u) + u.
Definition m1_2 (alpha beta tmax : R) : R := beta * (1 + u) * (1 + Emax alpha beta tmax) * (1 + u).
Definition Kc (phm mum : R) : R := exp phm * (1 + mum).
Definition Zlam (ee smin : R) : R := ee * (1 + u) + eta / smin.
Definition Z2 (alpha beta tmax ee smin : R) : R :=
  (1 + Emax alpha beta tmax) * (1 + u) * ee + Zlam ee smin * (1 + Emax alpha beta tmax + ee).

(** exp_tau (Compose.v) against the constant Kc: a token's weight factor for V1 and V2. *)
Lemma exp_tau_Kc : forall phi mu Pm Mm R, Rabs phi <= Pm -> Rabs mu <= Mm ->
  Rabs phi + Rabs mu <= R -> Rabs (exp phi * (1 + mu) - 1) <= Kc Pm Mm * R.
Proof.
  intros phi mu Pm Mm R Hp Hm HR.
  eapply Rle_trans; [apply (exp_tau phi mu Pm Mm Hp Hm)|].
  rewrite Rmult_comm. apply Rmult_le_compat_l; [|exact HR].
  unfold Kc. pose proof (exp_pos Pm). pose proof (Rabs_pos mu). apply Rmult_le_pos; lra.
Qed.

Lemma Rabs_sub_le : forall a b, a <= b -> Rabs (a - b) = b - a.
Proof. intros a b H. rewrite Rabs_left1 by lra. ring. Qed.

Section W.
Variables (fe : R -> R) (alpha beta ee tmax : R).
Hypothesis Hfe : exp_ok fe alpha beta ee.
Hypothesis Ha : 0 <= alpha.
Hypothesis Hb : 0 <= beta.
Hypothesis Hee : 0 <= ee.

Lemma fe_split : forall t, t <= 0 ->
  exists eps z, fe t = exp t * (1 + eps) + z /\ Rabs eps <= alpha + beta * Rabs t /\ Rabs z <= ee.
Proof.
  intros t Ht. destruct (Hfe t Ht) as [_ [_ H]].
  assert (0 <= alpha + beta * Rabs t) by (pose proof (Rabs_pos t); nra).
  destruct (split_err (fe t) (exp t) (alpha + beta * Rabs t) ee (exp_pos t) H0 Hee H)
    as [eps [z [He [Hz E]]]].
  exists eps, z. auto.
Qed.

Lemma fe_le : forall t, t <= 0 -> Rabs t <= (1 + u) * tmax ->
  fe t <= 1 + Emax alpha beta tmax + ee.
Proof.
  intros t Ht Hm. destruct (fe_split t Ht) as [eps [z [E [He Hz]]]]. rewrite E.
  assert (exp t <= 1) by (rewrite <- exp_0; apply exp_mono; lra).
  pose proof (exp_pos t). pose proof u_pos.
  assert (Rabs eps <= Emax alpha beta tmax).
  { unfold Emax. eapply Rle_trans; [exact He|].
    assert (beta * Rabs t <= beta * ((1 + u) * tmax)) by (apply Rmult_le_compat_l; lra). lra. }
  apply Rabs_le_inv in H2. apply Rabs_le_inv in Hz.
  assert (0 <= Emax alpha beta tmax) by (pose proof (Rabs_pos eps); lra).
  assert (exp t * (1 + eps) <= 1 * (1 + Emax alpha beta tmax)).
  { destruct (Rle_dec 0 (1 + eps)); [apply Rmult_le_compat; lra|nra]. }
  lra.
Qed.

Lemma fe_ge0 : 1 - alpha - ee <= fe 0.
Proof.
  destruct (fe_split 0 (Rle_refl 0)) as [eps [z [E [He Hz]]]]. rewrite E, exp_0.
  rewrite Rabs_R0, Rmult_0_r, Rplus_0_r in He. apply Rabs_le_inv in He. apply Rabs_le_inv in Hz.
  lra.
Qed.

(** exp(t) for the rounded argument t = rnd(a - b) of floats a <= b, against exp(a - b). *)
Lemma exp_rnd_sub : forall a b, fmtb a -> fmtb b -> a <= b ->
  exists d, Rabs d <= u /\ rnd (a - b) = (a - b) * (1 + d) /\ rnd (a - b) <= 0.
Proof.
  intros a b Fa Fb Hab. destruct (rnd_minus a b Fa Fb) as [d [Hd E]].
  exists d. split; [exact Hd|]. split; [exact E|].
  rewrite E. pose proof u_small. apply Rabs_le_inv in Hd.
  assert (0 <= 1 + d) by lra. nra.
Qed.

(** V1: e = exp_fn(rnd(x_hat - m)) against exp(x - m). *)
Lemma weight_v1 : forall xh x Xi m phm mum, fmtb xh -> fmtb m -> xh <= m ->
  Rabs (xh - x) <= Xi -> Xi + u * (m - xh) <= phm -> m0_1 alpha + m1_1 beta * (m - xh) <= mum ->
  exists tau z, fe (rnd (xh - m)) = exp (x - m) * (1 + tau) + z /\
    Rabs tau <= Kc phm mum * (Xi + u * (m - xh) + m0_1 alpha + m1_1 beta * (m - xh)) /\
    Rabs z <= ee.
Proof.
  intros xh x Xi m phm mum Fx Fm Hxm HXi Hph Hmu.
  destruct (exp_rnd_sub xh m Fx Fm Hxm) as [d [Hd [Et Ht]]].
  destruct (fe_split _ Ht) as [eps [z [E [He Hz]]]].
  set (phi := rnd (xh - m) - (x - m)).
  exists (exp phi * (1 + eps) - 1), z. split; [|split; [|exact Hz]].
  - rewrite E. replace (rnd (xh - m)) with ((x - m) + phi) at 1 by (unfold phi; ring).
    rewrite exp_plus. ring.
  - pose proof u_pos. pose proof (Rabs_pos (xh - x)).
    assert (Hphi : Rabs phi <= Xi + u * (m - xh)).
    { unfold phi. rewrite Et.
      replace ((xh - m) * (1 + d) - (x - m)) with ((xh - x) + d * (xh - m)) by ring.
      eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult.
      rewrite (Rabs_sub_le xh m) by lra.
      assert (Rabs d * (m - xh) <= u * (m - xh)) by (apply Rmult_le_compat_r; lra). lra. }
    assert (Heps : Rabs eps <= m0_1 alpha + m1_1 beta * (m - xh)).
    { eapply Rle_trans; [exact He|]. unfold m0_1, m1_1. rewrite Et, Rabs_mult.
      rewrite (Rabs_sub_le xh m) by lra.
      assert (Rabs (1 + d) <= 1 + u) by (apply Rabs_le; apply Rabs_le_inv in Hd; lra).
      assert ((m - xh) * Rabs (1 + d) <= (m - xh) * (1 + u)) by (apply Rmult_le_compat_l; lra).
      assert (beta * ((m - xh) * Rabs (1 + d)) <= beta * ((m - xh) * (1 + u))) by (apply Rmult_le_compat_l; lra).
      lra. }
    apply exp_tau_Kc; lra.
Qed.

(** V2: the token's weight e * (w_p / s_p) against exp(x - M). *)
Lemma weight_v2 : forall xh x Xi m M s smin phm mum, fmtb xh -> fmtb m -> fmtb M ->
  xh <= m -> m <= M -> M - xh <= tmax -> 0 < smin -> smin <= s ->
  Rabs (xh - x) <= Xi -> Xi + u * (M - xh) <= phm ->
  m0_2 alpha beta tmax + m1_2 alpha beta tmax * (M - xh) <= mum ->
  exists tau z,
    rnd (s * fe (rnd (m - M))) / s * fe (rnd (xh - m)) = exp (x - M) * (1 + tau) + z /\
    Rabs tau <= Kc phm mum * (Xi + u * (M - xh) + m0_2 alpha beta tmax
                              + m1_2 alpha beta tmax * (M - xh)) /\
    Rabs z <= Z2 alpha beta tmax ee smin.
Proof.
  intros xh x Xi m M s smin phm mum Fx Fm FM Hxm HmM Ht Psm Hs HXi Hph Hmu.
  pose proof u_pos. pose proof eta_pos. pose proof u_small.
  destruct (exp_rnd_sub xh m Fx Fm Hxm) as [d [Hd [Et Htt]]].
  destruct (exp_rnd_sub m M Fm FM HmM) as [dp [Hdp [Etp Htp]]].
  destruct (fe_split _ Htt) as [eps [z [E [He Hz]]]].
  destruct (fe_split _ Htp) as [epsp [zp [Ep [Hep Hzp]]]].
  destruct (rnd_err (s * fe (rnd (m - M)))) as [dw [ew [Hdw [Hew [_ Ew]]]]].
  set (tp := rnd (m - M)) in *. set (t := rnd (xh - m)) in *.
  set (phi := tp + t - (x - M)).
  set (Em := Emax alpha beta tmax).
  assert (Ps : 0 < s) by lra.
  (* bounds on the exp errors *)
  assert (Bt : Rabs t <= (1 + u) * (m - xh)).
  { rewrite Et, Rabs_mult, (Rabs_sub_le xh m) by lra.
    assert (Rabs (1 + d) <= 1 + u) by (apply Rabs_le; apply Rabs_le_inv in Hd; lra).
    assert ((m - xh) * Rabs (1 + d) <= (m - xh) * (1 + u)) by (apply Rmult_le_compat_l; lra). lra. }
  assert (Btp : Rabs tp <= (1 + u) * (M - m)).
  { rewrite Etp, Rabs_mult, (Rabs_sub_le m M) by lra.
    assert (Rabs (1 + dp) <= 1 + u) by (apply Rabs_le; apply Rabs_le_inv in Hdp; lra).
    assert ((M - m) * Rabs (1 + dp) <= (M - m) * (1 + u)) by (apply Rmult_le_compat_l; lra). lra. }
  assert (He' : Rabs eps <= alpha + beta * (1 + u) * (m - xh)).
  { eapply Rle_trans; [exact He|].
    assert (beta * Rabs t <= beta * ((1 + u) * (m - xh))) by (apply Rmult_le_compat_l; lra). lra. }
  assert (Hep' : Rabs epsp <= alpha + beta * (1 + u) * (M - m)).
  { eapply Rle_trans; [exact Hep|].
    assert (beta * Rabs tp <= beta * ((1 + u) * (M - m))) by (apply Rmult_le_compat_l; lra). lra. }
  assert (HEm1 : Rabs eps <= Em).
  { unfold Em, Emax. assert (beta * (1 + u) * (m - xh) <= beta * tmax * (1 + u)).
    { replace (beta * tmax * (1 + u)) with (beta * (1 + u) * tmax) by ring.
      apply Rmult_le_compat_l; [apply Rmult_le_pos; lra|lra]. }
    lra. }
  assert (HEm2 : Rabs epsp <= Em).
  { unfold Em, Emax. assert (beta * (1 + u) * (M - m) <= beta * tmax * (1 + u)).
    { replace (beta * tmax * (1 + u)) with (beta * (1 + u) * tmax) by ring.
      apply Rmult_le_compat_l; [apply Rmult_le_pos; lra|lra]. }
    lra. }
  assert (PEm : 0 <= Em) by (pose proof (Rabs_pos eps); lra).
  (* the decomposition *)
  set (mu := (1 + epsp) * (1 + dw) * (1 + eps) - 1).
  set (zl := zp * (1 + dw) + ew / s).
  exists (exp phi * (1 + mu) - 1),
         (exp tp * (1 + epsp) * (1 + dw) * z + zl * fe t).
  split; [|split].
  - assert (L1 : rnd (s * fe tp) / s = exp tp * (1 + epsp) * (1 + dw) + zl)
      by (rewrite Ew, Ep; unfold zl; field; lra).
    rewrite L1.
    assert (EE : exp (x - M) * exp phi = exp tp * exp t).
    { rewrite <- !exp_plus. f_equal. unfold phi. ring. }
    assert (R1 : exp (x - M) * (1 + (exp phi * (1 + mu) - 1))
                 = exp tp * exp t * ((1 + epsp) * (1 + dw) * (1 + eps)))
      by (unfold mu; rewrite <- EE; ring).
    rewrite R1, E. ring.
  - assert (Hphi : Rabs phi <= Xi + u * (M - xh)).
    { unfold phi. rewrite Etp, Et.
      replace ((m - M) * (1 + dp) + (xh - m) * (1 + d) - (x - M))
        with ((xh - x) + (dp * (m - M) + d * (xh - m))) by ring.
      eapply Rle_trans; [apply Rabs_triang|].
      assert (Rabs (dp * (m - M) + d * (xh - m)) <= u * (M - xh)).
      { eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult.
        rewrite (Rabs_sub_le m M), (Rabs_sub_le xh m) by lra.
        assert (Rabs dp * (M - m) <= u * (M - m)) by (apply Rmult_le_compat_r; lra).
        assert (Rabs d * (m - xh) <= u * (m - xh)) by (apply Rmult_le_compat_r; lra).
        lra. }
      lra. }
    assert (Hmu' : Rabs mu <= m0_2 alpha beta tmax + m1_2 alpha beta tmax * (M - xh)).
    { unfold mu.
      set (a := Rabs epsp) in *. set (b := Rabs eps) in *.
      assert (Pa : 0 <= a) by apply Rabs_pos. assert (Pb : 0 <= b) by apply Rabs_pos.
      assert (X1 : Rabs ((1 + epsp) * (1 + eps) - 1) <= (a + b) * (1 + Em)).
      { replace ((1 + epsp) * (1 + eps) - 1) with (epsp + eps + epsp * eps) by ring.
        eapply Rle_trans; [apply Rabs_triang|].
        eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|]. rewrite Rabs_mult.
        fold a b. assert (a * b <= Em * b) by (apply Rmult_le_compat_r; lra).
        assert (Em * b <= Em * (a + b)) by (apply Rmult_le_compat_l; lra).
        lra. }
      replace ((1 + epsp) * (1 + dw) * (1 + eps) - 1)
        with (((1 + epsp) * (1 + eps) - 1) * (1 + dw) + dw) by ring.
      eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult.
      assert (Rabs (1 + dw) <= 1 + u) by (apply Rabs_le; apply Rabs_le_inv in Hdw; lra).
      assert (Rabs ((1 + epsp) * (1 + eps) - 1) * Rabs (1 + dw) <= (a + b) * (1 + Em) * (1 + u))
        by (apply Rmult_le_compat; auto using Rabs_pos).
      assert (a + b <= 2 * alpha + beta * (1 + u) * (M - xh)) by lra.
      assert ((a + b) * (1 + Em) * (1 + u) <= (2 * alpha + beta * (1 + u) * (M - xh)) * (1 + Em) * (1 + u)).
      { apply Rmult_le_compat_r; [lra|]. apply Rmult_le_compat_r; lra. }
      unfold m0_2, m1_2. fold Em.
      assert ((2 * alpha + beta * (1 + u) * (M - xh)) * (1 + Em) * (1 + u) + u
              = 2 * alpha * (1 + Em) * (1 + u) + u + beta * (1 + u) * (1 + Em) * (1 + u) * (M - xh)) by ring.
      lra. }
    apply exp_tau_Kc; lra.
  - unfold Z2, Zlam. fold Em.
    assert ((1 + u) * (m - xh) <= (1 + u) * tmax) by (apply Rmult_le_compat_l; lra).
    assert (Hft : fe t <= 1 + Em + ee) by (apply fe_le; auto; lra).
    assert (P0 : 0 <= fe t) by (apply Hfe; exact Htt).
    assert (Xe : exp tp <= 1) by (rewrite <- exp_0; apply exp_mono; lra).
    pose proof (exp_pos tp).
    assert (A1 : Rabs (exp tp * (1 + epsp) * (1 + dw)) <= (1 + Em) * (1 + u)).
    { rewrite !Rabs_mult, (Rabs_pos_eq (exp tp)) by lra.
      assert (Rabs (1 + epsp) <= 1 + Em) by (apply Rabs_le; apply Rabs_le_inv in HEm2; lra).
      assert (Rabs (1 + dw) <= 1 + u) by (apply Rabs_le; apply Rabs_le_inv in Hdw; lra).
      assert (exp tp * Rabs (1 + epsp) <= 1 * (1 + Em)) by (apply Rmult_le_compat; try lra; apply Rabs_pos).
      apply Rmult_le_compat; try lra; [apply Rmult_le_pos; [lra|apply Rabs_pos]|apply Rabs_pos]. }
    assert (A2 : Rabs zl <= ee * (1 + u) + eta / smin).
    { unfold zl. eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult.
      assert (Rabs (1 + dw) <= 1 + u) by (apply Rabs_le; apply Rabs_le_inv in Hdw; lra).
      assert (Rabs zp * Rabs (1 + dw) <= ee * (1 + u)) by (apply Rmult_le_compat; auto using Rabs_pos).
      assert (Rabs (ew / s) <= eta / smin).
      { unfold Rdiv. rewrite Rabs_mult, Rabs_inv, (Rabs_pos_eq s) by lra.
        apply Rmult_le_compat; auto using Rabs_pos; [left; apply Rinv_0_lt_compat; lra|].
        apply Rinv_le_contravar; lra. }
      lra. }
    eapply Rle_trans; [apply Rabs_triang|].
    rewrite (Rabs_mult (exp tp * (1 + epsp) * (1 + dw)) z), (Rabs_mult zl (fe t)).
    rewrite (Rabs_pos_eq (fe t)) by lra.
    assert (Rabs (exp tp * (1 + epsp) * (1 + dw)) * Rabs z <= (1 + Em) * (1 + u) * ee)
      by (apply Rmult_le_compat; auto using Rabs_pos).
    assert (Rabs zl * fe t <= (ee * (1 + u) + eta / smin) * (1 + Em + ee))
      by (apply Rmult_le_compat; auto using Rabs_pos).
    lra.
Qed.

End W.
