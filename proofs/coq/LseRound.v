(** Rounding error of one fp32 merge step of kernels/include/pagedattn/lse_state.h
    (PartitionState::merge), and of a left fold of merges over P partitions, in Flocq's
    model of binary32.

    Model (each assumption is a hypothesis of the theorems below, nothing is axiomatized):
    - binary32 = Flocq's FLT format with 24-bit precision and emin = -149 (subnormals
      included), every +, -, *, / rounded to nearest, ties to even ([rnd]). Flocq's FLT has
      no largest exponent, so it equals IEEE binary32 only while no result overflows
      (|x| < 2^128): that is a stated assumption, not checked here.
    - max is exact (it returns one operand).
    - exp is the caller's exp_fn (expf or __expf): on the float argument d it returns some
      E with |E - exp d| <= e_exp * exp d ([exp_model]); e_exp is a parameter.
    - No underflow in the products and the quotient: each of their exact results is 0 or
      at least 2^-126 in magnitude ([no_underflow]). Sums and differences of two floats
      need no such hypothesis: a tiny sum of floats is exact (Flocq's
      FLT_plus_error_N_ex).
    - The numerator w1*o1 + w2*o2 is computed as rnd(rnd(w1*o1) + rnd(w2*o2)), which is
      what the header's expression does when not contracted into an fma (the host build
      uses -ffp-contract=off); [merge_step_error_fma] covers the fma-contracted form. *)
From Coq Require Import Reals List Lra Lia.
Import ListNotations.
From Flocq Require Import Core Relative Plus_error.
Open Scope R_scope.

Definition prec : Z := 24%Z.
Definition emin : Z := (-149)%Z.
Lemma prec_pos : (0 < prec)%Z. Proof. reflexivity. Qed.
Global Instance prec_gt_0_inst : Prec_gt_0 prec := prec_pos.

Notation fmt := (FLT_exp emin prec).
Definition fmtb (x : R) : Prop := generic_format radix2 fmt x.
Definition rnd (x : R) : R := round radix2 fmt ZnearestE x.

(** The unit roundoff of binary32, 2^-24. *)
Definition u : R := u_ro radix2 prec.

Lemma u_value : u = / 16777216.
Proof. unfold u, u_ro, prec. simpl. unfold Z.pow_pos. simpl. field. Qed.

Lemma u_pos : 0 <= u. Proof. apply u_ro_pos. Qed.
Lemma u_small : u <= / 16777216. Proof. rewrite u_value. lra. Qed.

(** The smallest normal binary32 magnitude, 2^-126. *)
Definition no_underflow (x : R) : Prop := x = 0 \/ bpow radix2 (emin + prec - 1) <= Rabs x.

Definition exp_model (e_exp E d : R) : Prop := Rabs (E - exp d) <= e_exp * exp d.

Lemma fmtb_rnd : forall x, fmtb (rnd x).
Proof. intros x. apply generic_format_round; auto with typeclass_instances. Qed.

Lemma rnd_rel : forall x, no_underflow x -> exists d, Rabs d <= u /\ rnd x = x * (1 + d).
Proof.
  intros x [->|H].
  - exists 0. split; [rewrite Rabs_R0; apply u_pos|].
    unfold rnd. rewrite round_0 by auto with typeclass_instances. ring.
  - destruct (relative_error_N_FLT_ex radix2 emin prec prec_pos (fun z => negb (Z.even z)) x H) as [d [Hd E]].
    exists d. split; [exact Hd|exact E].
Qed.

Lemma rnd_plus : forall x y, fmtb x -> fmtb y ->
  exists d, Rabs d <= u /\ rnd (x + y) = (x + y) * (1 + d).
Proof.
  intros x y Fx Fy.
  destruct (FLT_plus_error_N_ex radix2 emin prec
              (fun z => negb (Z.even z)) x y Fx Fy) as [d [Hd E]].
  exists d. split; [|exact E]. eapply Rle_trans; [exact Hd|apply u_rod1pu_ro_le_u_ro].
Qed.

Lemma rnd_nonneg : forall x, 0 <= x -> 0 <= rnd x.
Proof.
  intros x H. unfold rnd. rewrite <- (round_0 radix2 fmt ZnearestE).
  apply round_le; auto with typeclass_instances.
Qed.

Lemma fmtb_max : forall a b, fmtb a -> fmtb b -> fmtb (Rmax a b).
Proof. intros a b Fa Fb. unfold Rmax. destruct (Rle_dec a b); assumption. Qed.

Lemma exp_mono : forall x y, x <= y -> exp x <= exp y.
Proof.
  intros x y H. destruct (Req_dec x y) as [->|N]; [lra|].
  apply Rlt_le, exp_increasing. lra.
Qed.

(** * Generic error composition *)

(** A relative error b on top of a relative error a (against y >= 0). *)
Lemma rel_compose : forall x y z a b, 0 <= y -> 0 <= a -> 0 <= b ->
  Rabs (x - y) <= a * y -> Rabs (z - x) <= b * Rabs x ->
  Rabs (z - y) <= ((1 + a) * (1 + b) - 1) * y.
Proof.
  intros x y z a b Hy Ha Hb H1 H2.
  assert (Hx : Rabs x <= (1 + a) * y).
  { replace x with ((x - y) + y) by ring.
    eapply Rle_trans; [apply Rabs_triang|]. rewrite (Rabs_pos_eq y Hy). lra. }
  replace (z - y) with ((z - x) + (x - y)) by ring.
  eapply Rle_trans; [apply Rabs_triang|].
  assert (b * Rabs x <= b * ((1 + a) * y)) by (apply Rmult_le_compat_l; auto).
  nra.
Qed.

Lemma rel_factor : forall x d b, Rabs d <= b -> Rabs (x * (1 + d) - x) <= b * Rabs x.
Proof.
  intros x d b H. replace (x * (1 + d) - x) with (d * x) by ring.
  rewrite Rabs_mult. apply Rmult_le_compat_r; [apply Rabs_pos|exact H].
Qed.

Lemma abs_sum_le : forall x1 y1 x2 y2 a1 a2,
  Rabs (x1 - y1) <= a1 -> Rabs (x2 - y2) <= a2 -> Rabs ((x1 + x2) - (y1 + y2)) <= a1 + a2.
Proof.
  intros. replace ((x1 + x2) - (y1 + y2)) with ((x1 - y1) + (x2 - y2)) by ring.
  eapply Rle_trans; [apply Rabs_triang|lra].
Qed.

(** * One weight: w = rnd(s * E), E = exp_fn(rnd(m - M)), against s * exp(m - M). *)

Lemma weight_err : forall s m M E e_exp,
  fmtb m -> fmtb M -> m <= M -> 0 <= s -> 0 <= e_exp <= 1 ->
  exp_model e_exp E (rnd (m - M)) -> no_underflow (s * E) ->
  Rabs (rnd (s * E) - s * exp (m - M))
  <= (exp ((M - m) * u) * (1 + e_exp) * (1 + u) - 1) * (s * exp (m - M)).
Proof.
  intros s m M E e Fm FM HmM Hs He HE HU.
  destruct (rnd_plus m (- M) Fm (generic_format_opp _ _ _ FM)) as [d0 [Hd0 R0]].
  fold (m - M) in R0.
  destruct (rnd_rel _ HU) as [d1 [Hd1 R1]]. rewrite R1.
  set (x := m - M) in *. set (a := (M - m) * u).
  set (t := x * d0).
  assert (Ha : 0 <= a) by (unfold a; apply Rmult_le_pos; [lra|apply u_pos]).
  assert (Ht : Rabs t <= a).
  { unfold t, a. rewrite Rabs_mult. replace (M - m) with (Rabs x)
      by (unfold x; rewrite Rabs_left1 by lra; ring).
    apply Rmult_le_compat_l; [apply Rabs_pos|exact Hd0]. }
  assert (Ed : exp (rnd x) = exp x * exp t).
  { rewrite R0, <- exp_plus. f_equal. unfold t. ring. }
  unfold exp_model in HE. rewrite Ed in HE.
  pose proof (exp_pos x) as Px. pose proof (exp_pos t) as Pt.
  set (eps := (E - exp x * exp t) / (exp x * exp t)).
  assert (Eeps : E = exp x * exp t * (1 + eps)) by (unfold eps; field; lra).
  assert (Heps : Rabs eps <= e).
  { assert (Pxt : 0 < exp x * exp t) by nra.
    unfold eps. unfold Rdiv. rewrite Rabs_mult, Rabs_inv, (Rabs_pos_eq (exp x * exp t)) by lra.
    apply (Rmult_le_reg_r (exp x * exp t)); [exact Pxt|].
    rewrite Rmult_assoc, Rinv_l by lra. lra. }
  rewrite Eeps.
  set (X := exp t). set (A := exp a).
  assert (XA : X <= A) by (apply exp_mono; apply Rabs_le_inv in Ht; lra).
  assert (AX : 1 - a <= X).
  { pose proof (exp_ineq1_le t). apply Rabs_le_inv in Ht. unfold X. lra. }
  assert (A1 : 1 + a <= A) by apply exp_ineq1_le.
  apply Rabs_le_inv in Heps. apply Rabs_le_inv in Hd1. pose proof u_pos. pose proof u_small.
  replace (s * (exp x * X * (1 + eps)) * (1 + d1) - s * exp x)
    with ((X * (1 + eps) * (1 + d1) - 1) * (s * exp x)) by ring.
  rewrite Rabs_mult, (Rabs_pos_eq (s * exp x)) by nra.
  apply Rmult_le_compat_r; [nra|].
  assert (P0 : 0 <= X) by (unfold X; lra).
  assert (Up : X * (1 + eps) * (1 + d1) <= A * (1 + e) * (1 + u)).
  { apply Rmult_le_compat; try nra. }
  assert (Lo : 2 - A * (1 + e) * (1 + u) <= X * (1 + eps) * (1 + d1)).
  { destruct (Rle_dec 1 a) as [Big|Small].
    - assert (B1 : A <= A * (1 + e)) by nra.
      assert (B2 : A * (1 + e) <= A * (1 + e) * (1 + u)) by nra.
      assert (N1 : 0 <= X * (1 + eps)) by (apply Rmult_le_pos; lra).
      assert (N2 : 0 <= X * (1 + eps) * (1 + d1)) by (apply Rmult_le_pos; lra).
      lra.
    - assert (L1 : (1 - a) * (1 - e) <= X * (1 + eps)) by (apply Rmult_le_compat; nra).
      assert (L2 : (1 - a) * (1 - e) * (1 - u) <= X * (1 + eps) * (1 + d1))
        by (apply Rmult_le_compat; nra).
      assert (U1 : (1 + a) * (1 + e) <= A * (1 + e)) by (apply Rmult_le_compat_r; lra).
      assert (U2 : (1 + a) * (1 + e) * (1 + u) <= A * (1 + e) * (1 + u))
        by (apply Rmult_le_compat_r; lra).
      assert (Sum : (1 - a) * (1 - e) * (1 - u) + (1 + a) * (1 + e) * (1 + u)
                    = 2 + 2 * (a * e + a * u + e * u)) by ring.
      assert (0 <= a * e) by (apply Rmult_le_pos; lra).
      assert (0 <= a * u) by (apply Rmult_le_pos; lra).
      assert (0 <= e * u) by (apply Rmult_le_pos; lra).
      lra. }
  apply Rabs_le. lra.
Qed.

(** * One merge step *)

(** The factor bounding each computed weight against its exact value: the exp argument
    m - M is off by at most |m1 - m2| u (one rounding of a difference whose magnitude is at
    most the gap), exp adds e_exp, the product s * E adds u. *)
Definition alpha (e_exp gap : R) : R := exp (gap * u) * (1 + e_exp) * (1 + u) - 1.
(** Bound on s (relative) after the rounded sum w1 + w2. *)
Definition gamma_s (e_exp gap : R) : R := (1 + alpha e_exp gap) * (1 + u) - 1.
(** Bound on the numerator (relative to w1|o1| + w2|o2|): two more roundings. *)
Definition beta_n (e_exp gap : R) : R := (1 + alpha e_exp gap) * (1 + u) * (1 + u) - 1.
(** Bound on o (relative to the exact merge's (w1|o1| + w2|o2|)/s). *)
Definition kappa_o (e_exp gap : R) : R :=
  (1 + beta_n e_exp gap) * (1 + u) / (1 - gamma_s e_exp gap) - 1.

Lemma alpha_nonneg : forall e gap, 0 <= e -> 0 <= gap -> 0 <= alpha e gap.
Proof.
  intros e gap He Hg. unfold alpha. pose proof u_pos.
  assert (1 <= exp (gap * u)).
  { pose proof (exp_ineq1_le (gap * u)). assert (0 <= gap * u) by (apply Rmult_le_pos; lra). lra. }
  assert (1 <= exp (gap * u) * (1 + e)) by nra.
  assert (exp (gap * u) * (1 + e) <= exp (gap * u) * (1 + e) * (1 + u)) by nra.
  lra.
Qed.

Lemma weight_err_gap : forall s m1 m2 m E e_exp,
  fmtb m1 -> fmtb m2 -> (m = m1 \/ m = m2) -> 0 <= s -> 0 <= e_exp <= 1 ->
  exp_model e_exp E (rnd (m - Rmax m1 m2)) -> no_underflow (s * E) ->
  Rabs (rnd (s * E) - s * exp (m - Rmax m1 m2))
  <= alpha e_exp (Rabs (m1 - m2)) * (s * exp (m - Rmax m1 m2)).
Proof.
  intros s m1 m2 m E e F1 F2 Hm Hs He HE HU.
  assert (Fm : fmtb m) by (destruct Hm as [->| ->]; auto).
  assert (Le : m <= Rmax m1 m2) by (destruct Hm as [->| ->]; [apply Rmax_l|apply Rmax_r]).
  assert (Gap : Rmax m1 m2 - m <= Rabs (m1 - m2)).
  { unfold Rmax. destruct (Rle_dec m1 m2), Hm as [->| ->];
      unfold Rabs; destruct (Rcase_abs _); lra. }
  eapply Rle_trans; [apply (weight_err s m (Rmax m1 m2) E e Fm (fmtb_max _ _ F1 F2) Le Hs He HE HU)|].
  apply Rmult_le_compat_r; [pose proof (exp_pos (m - Rmax m1 m2)); nra|].
  unfold alpha. pose proof u_pos.
  assert (exp ((Rmax m1 m2 - m) * u) <= exp (Rabs (m1 - m2) * u))
    by (apply exp_mono, Rmult_le_compat_r; auto).
  assert (0 < 1 + e) by lra. assert (0 < 1 + u) by lra.
  apply Rplus_le_compat_r. apply Rmult_le_compat_r; [lra|]. apply Rmult_le_compat_r; lra.
Qed.

(** merge_step_error, the (m, s) part: M is exact, and the computed s is within gamma_s of
    the exact merge w1* + w2* of the same (already rounded) inputs. *)
Theorem merge_step_error_s :
  forall m1 s1 m2 s2 E1 E2 e_exp,
  fmtb m1 -> fmtb m2 -> 0 <= s1 -> 0 <= s2 -> 0 <= e_exp <= 1 ->
  exp_model e_exp E1 (rnd (m1 - Rmax m1 m2)) ->
  exp_model e_exp E2 (rnd (m2 - Rmax m1 m2)) ->
  no_underflow (s1 * E1) -> no_underflow (s2 * E2) ->
  let s := rnd (rnd (s1 * E1) + rnd (s2 * E2)) in
  let sx := s1 * exp (m1 - Rmax m1 m2) + s2 * exp (m2 - Rmax m1 m2) in
  Rabs (s - sx) <= gamma_s e_exp (Rabs (m1 - m2)) * sx.
Proof.
  intros m1 s1 m2 s2 E1 E2 e F1 F2 Hs1 Hs2 He HE1 HE2 HU1 HU2 s sx.
  pose proof (weight_err_gap s1 m1 m2 m1 E1 e F1 F2 (or_introl eq_refl) Hs1 He HE1 HU1) as W1.
  pose proof (weight_err_gap s2 m1 m2 m2 E2 e F1 F2 (or_intror eq_refl) Hs2 He HE2 HU2) as W2.
  set (a := alpha e (Rabs (m1 - m2))) in *.
  assert (Ha : 0 <= a) by (apply alpha_nonneg; [lra|apply Rabs_pos]).
  assert (W : Rabs ((rnd (s1 * E1) + rnd (s2 * E2)) - sx) <= a * sx)
    by (unfold sx; rewrite Rmult_plus_distr_l; apply abs_sum_le; assumption).
  destruct (rnd_plus _ _ (fmtb_rnd (s1 * E1)) (fmtb_rnd (s2 * E2))) as [d [Hd R]].
  unfold s. rewrite R. unfold gamma_s. fold a.
  assert (Hsx : 0 <= sx).
  { unfold sx. pose proof (exp_pos (m1 - Rmax m1 m2)). pose proof (exp_pos (m2 - Rmax m1 m2)). nra. }
  eapply rel_compose; [exact Hsx|exact Ha|apply u_pos|exact W|apply rel_factor, Hd].
Qed.

(** * The o component *)

Lemma numerator_err : forall w1 w2 w1x w2x o1 o2 a,
  0 <= w1x -> 0 <= w2x -> 0 <= a ->
  Rabs (w1 - w1x) <= a * w1x -> Rabs (w2 - w2x) <= a * w2x ->
  no_underflow (w1 * o1) -> no_underflow (w2 * o2) ->
  Rabs (rnd (rnd (w1 * o1) + rnd (w2 * o2)) - (w1x * o1 + w2x * o2))
  <= ((1 + a) * (1 + u) * (1 + u) - 1) * (w1x * Rabs o1 + w2x * Rabs o2).
Proof.
  intros w1 w2 w1x w2x o1 o2 a P1 P2 Ha H1 H2 U1 U2.
  destruct (rnd_rel _ U1) as [d1 [Hd1 R1]]. destruct (rnd_rel _ U2) as [d2 [Hd2 R2]].
  destruct (rnd_plus _ _ (fmtb_rnd (w1 * o1)) (fmtb_rnd (w2 * o2))) as [d3 [Hd3 R3]].
  rewrite R3, R1, R2. pose proof u_pos.
  assert (K : forall w wx d, 0 <= wx -> Rabs (w - wx) <= a * wx -> Rabs d <= u ->
            Rabs (w * (1 + d) * (1 + d3) - wx) <= ((1 + a) * (1 + u) * (1 + u) - 1) * wx).
  { intros w wx d Pw Hw Hd.
    replace ((1 + a) * (1 + u) * (1 + u) - 1)
      with ((1 + ((1 + a) * (1 + u) - 1)) * (1 + u) - 1) by ring.
    apply rel_compose with (x := w * (1 + d)); auto.
    - assert (0 <= a * u) by (apply Rmult_le_pos; lra). nra.
    - apply rel_compose with (x := w); auto. apply rel_factor, Hd.
    - apply rel_factor, Hd3. }
  replace ((w1 * o1 * (1 + d1) + w2 * o2 * (1 + d2)) * (1 + d3) - (w1x * o1 + w2x * o2))
    with ((w1 * (1 + d1) * (1 + d3) - w1x) * o1 + (w2 * (1 + d2) * (1 + d3) - w2x) * o2)
    by ring.
  eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult.
  pose proof (K w1 w1x d1 P1 H1 Hd1). pose proof (K w2 w2x d2 P2 H2 Hd2).
  pose proof (Rabs_pos o1). pose proof (Rabs_pos o2).
  assert (Rabs (w1 * (1 + d1) * (1 + d3) - w1x) * Rabs o1
          <= ((1 + a) * (1 + u) * (1 + u) - 1) * w1x * Rabs o1)
    by (apply Rmult_le_compat_r; lra).
  assert (Rabs (w2 * (1 + d2) * (1 + d3) - w2x) * Rabs o2
          <= ((1 + a) * (1 + u) * (1 + u) - 1) * w2x * Rabs o2)
    by (apply Rmult_le_compat_r; lra).
  lra.
Qed.

(** The numerator as an fma contracts it, fma(w1, o1, rnd(w2 * o2)) (nvcc's default
    --fmad=true may emit this for the header's expression): one rounding fewer on the
    first term, so the same bound holds. *)
Lemma numerator_fma : forall w1 w2 w1x w2x o1 o2 a,
  0 <= w1x -> 0 <= w2x -> 0 <= a ->
  Rabs (w1 - w1x) <= a * w1x -> Rabs (w2 - w2x) <= a * w2x ->
  no_underflow (w2 * o2) -> no_underflow (w1 * o1 + rnd (w2 * o2)) ->
  Rabs (rnd (w1 * o1 + rnd (w2 * o2)) - (w1x * o1 + w2x * o2))
  <= ((1 + a) * (1 + u) * (1 + u) - 1) * (w1x * Rabs o1 + w2x * Rabs o2).
Proof.
  intros w1 w2 w1x w2x o1 o2 a P1 P2 Ha H1 H2 U2 U3.
  destruct (rnd_rel _ U2) as [d2 [Hd2 R2]]. destruct (rnd_rel _ U3) as [d3 [Hd3 R3]].
  rewrite R3, R2. pose proof u_pos.
  assert (K : forall w wx d, 0 <= wx -> Rabs (w - wx) <= a * wx -> Rabs d <= u ->
            Rabs (w * (1 + d) * (1 + d3) - wx) <= ((1 + a) * (1 + u) * (1 + u) - 1) * wx).
  { intros w wx d Pw Hw Hd.
    replace ((1 + a) * (1 + u) * (1 + u) - 1)
      with ((1 + ((1 + a) * (1 + u) - 1)) * (1 + u) - 1) by ring.
    apply rel_compose with (x := w * (1 + d)); auto.
    - assert (0 <= a * u) by (apply Rmult_le_pos; lra). nra.
    - apply rel_compose with (x := w); auto. apply rel_factor, Hd.
    - apply rel_factor, Hd3. }
  assert (Z : Rabs 0 <= u) by (rewrite Rabs_R0; exact u_pos).
  replace ((w1 * o1 + w2 * o2 * (1 + d2)) * (1 + d3) - (w1x * o1 + w2x * o2))
    with ((w1 * (1 + 0) * (1 + d3) - w1x) * o1 + (w2 * (1 + d2) * (1 + d3) - w2x) * o2)
    by ring.
  eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult.
  pose proof (K w1 w1x 0 P1 H1 Z). pose proof (K w2 w2x d2 P2 H2 Hd2).
  pose proof (Rabs_pos o1). pose proof (Rabs_pos o2).
  assert (Rabs (w1 * (1 + 0) * (1 + d3) - w1x) * Rabs o1
          <= ((1 + a) * (1 + u) * (1 + u) - 1) * w1x * Rabs o1)
    by (apply Rmult_le_compat_r; lra).
  assert (Rabs (w2 * (1 + d2) * (1 + d3) - w2x) * Rabs o2
          <= ((1 + a) * (1 + u) * (1 + u) - 1) * w2x * Rabs o2)
    by (apply Rmult_le_compat_r; lra).
  lra.
Qed.

Lemma division_err : forall n nx s sx A b g d,
  0 < sx -> Rabs nx <= A -> Rabs (n - nx) <= b * A -> Rabs (s - sx) <= g * sx ->
  0 <= b -> 0 <= g < 1 -> Rabs d <= u ->
  Rabs (n / s * (1 + d) - nx / sx) <= ((1 + b) * (1 + u) / (1 - g) - 1) * (A / sx).
Proof.
  intros n nx s sx A b g d Psx HA Hn Hs Hb Hg Hd. pose proof u_pos.
  assert (Ps : sx * (1 - g) <= s) by (apply Rabs_le_inv in Hs; lra).
  assert (Ps' : 0 < s) by nra.
  assert (PA : 0 <= A) by (pose proof (Rabs_pos nx); lra).
  replace (n / s * (1 + d) - nx / sx)
    with ((sx * ((n - nx) * (1 + d) + nx * d) - nx * (s - sx)) / (s * sx))
    by (field; lra).
  unfold Rdiv at 1. rewrite Rabs_mult, Rabs_inv, (Rabs_pos_eq (s * sx)) by nra.
  set (K := b * (1 + u) + u + g).
  assert (Num : Rabs (sx * ((n - nx) * (1 + d) + nx * d) - nx * (s - sx)) <= sx * A * K).
  { unfold Rminus at 1. eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_Ropp.
    rewrite !Rabs_mult, (Rabs_pos_eq sx) by lra.
    assert (T1 : Rabs ((n - nx) * (1 + d) + nx * d) <= b * A * (1 + u) + A * u).
    { eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult.
      assert (Rabs (1 + d) <= 1 + u)
        by (apply Rabs_le; apply Rabs_le_inv in Hd; lra).
      pose proof (Rabs_pos (n - nx)). pose proof (Rabs_pos nx). pose proof (Rabs_pos d).
      pose proof (Rabs_pos (1 + d)).
      assert (Rabs (n - nx) * Rabs (1 + d) <= b * A * (1 + u))
        by (apply Rmult_le_compat; lra).
      assert (Rabs nx * Rabs d <= A * u) by (apply Rmult_le_compat; lra).
      lra. }
    assert (T2 : Rabs nx * Rabs (s - sx) <= A * (g * sx))
      by (apply Rmult_le_compat; auto using Rabs_pos).
    unfold K.
    assert (sx * Rabs ((n - nx) * (1 + d) + nx * d) <= sx * (b * A * (1 + u) + A * u))
      by (apply Rmult_le_compat_l; lra).
    nra. }
  assert (PK : 0 <= K) by (unfold K; nra).
  apply Rle_trans with (sx * A * K * / (sx * (1 - g) * sx)).
  - assert (0 < sx * (1 - g)) by (apply Rmult_lt_0_compat; lra).
    apply Rmult_le_compat; [apply Rabs_pos|left; apply Rinv_0_lt_compat; apply Rmult_lt_0_compat; lra|exact Num|].
    assert (0 < sx * (1 - g)) by (apply Rmult_lt_0_compat; lra).
    apply Rinv_le_contravar; [apply Rmult_lt_0_compat; lra|]. apply Rmult_le_compat_r; lra.
  - right. unfold K. field. lra.
Qed.

(** merge_step_error: one fp32 merge step as PartitionState::merge computes it.
    Inputs: two non-empty states (m1, s1, o1), (m2, s2, o2) whose m's are floats and whose
    s's are >= 0; E1, E2 the values exp_fn returned on the rounded differences. Against the
    exact merge of these same inputs, wix = s_i exp(m_i - M), sx = w1x + w2x,
    ox = (w1x o1 + w2x o2) / sx, with gap = |m1 - m2|:
      |s - sx| <= gamma_s * sx,
      |o - ox| <= kappa_o * (w1x |o1| + w2x |o2|) / sx.
    M = max(m1, m2) is exact (no error term). *)
Theorem merge_step_error :
  forall m1 s1 o1 m2 s2 o2 E1 E2 e_exp,
  fmtb m1 -> fmtb m2 -> 0 <= s1 -> 0 <= s2 -> 0 <= e_exp <= 1 ->
  exp_model e_exp E1 (rnd (m1 - Rmax m1 m2)) ->
  exp_model e_exp E2 (rnd (m2 - Rmax m1 m2)) ->
  no_underflow (s1 * E1) -> no_underflow (s2 * E2) ->
  let w1 := rnd (s1 * E1) in
  let w2 := rnd (s2 * E2) in
  let s := rnd (w1 + w2) in
  let n := rnd (rnd (w1 * o1) + rnd (w2 * o2)) in
  no_underflow (w1 * o1) -> no_underflow (w2 * o2) -> no_underflow (n / s) ->
  let o := rnd (n / s) in
  let w1x := s1 * exp (m1 - Rmax m1 m2) in
  let w2x := s2 * exp (m2 - Rmax m1 m2) in
  let sx := w1x + w2x in
  let ox := (w1x * o1 + w2x * o2) / sx in
  0 < sx -> gamma_s e_exp (Rabs (m1 - m2)) < 1 ->
  Rabs (s - sx) <= gamma_s e_exp (Rabs (m1 - m2)) * sx /\
  Rabs (o - ox) <= kappa_o e_exp (Rabs (m1 - m2)) * ((w1x * Rabs o1 + w2x * Rabs o2) / sx).
Proof.
  intros m1 s1 o1 m2 s2 o2 E1 E2 e F1 F2 Hs1 Hs2 He HE1 HE2 HU1 HU2 w1 w2 s n
    HV1 HV2 HQ o w1x w2x sx ox Psx Hg.
  assert (S : Rabs (s - sx) <= gamma_s e (Rabs (m1 - m2)) * sx)
    by (apply merge_step_error_s; assumption).
  split; [exact S|].
  pose proof (weight_err_gap s1 m1 m2 m1 E1 e F1 F2 (or_introl eq_refl) Hs1 He HE1 HU1) as W1.
  pose proof (weight_err_gap s2 m1 m2 m2 E2 e F1 F2 (or_intror eq_refl) Hs2 He HE2 HU2) as W2.
  fold w1 w2 w1x w2x in W1, W2.
  assert (Ha : 0 <= alpha e (Rabs (m1 - m2))) by (apply alpha_nonneg; [lra|apply Rabs_pos]).
  assert (P1 : 0 <= w1x) by (unfold w1x; pose proof (exp_pos (m1 - Rmax m1 m2)); nra).
  assert (P2 : 0 <= w2x) by (unfold w2x; pose proof (exp_pos (m2 - Rmax m1 m2)); nra).
  pose proof (numerator_err w1 w2 w1x w2x o1 o2 _ P1 P2 Ha W1 W2 HV1 HV2) as N.
  fold n in N.
  destruct (rnd_rel _ HQ) as [d [Hd R]]. unfold o. rewrite R.
  pose proof u_pos.
  assert (Hg0 : 0 <= gamma_s e (Rabs (m1 - m2))).
  { unfold gamma_s. assert (0 <= alpha e (Rabs (m1 - m2)) * u) by (apply Rmult_le_pos; lra). nra. }
  assert (T : Rabs (w1x * o1 + w2x * o2) <= w1x * Rabs o1 + w2x * Rabs o2).
  { eapply Rle_trans; [apply Rabs_triang|].
    rewrite !Rabs_mult, (Rabs_pos_eq w1x), (Rabs_pos_eq w2x) by lra. lra. }
  assert (Hb : 0 <= beta_n e (Rabs (m1 - m2))).
  { unfold beta_n. assert (0 <= alpha e (Rabs (m1 - m2)) * u) by (apply Rmult_le_pos; lra).
    assert (0 <= (1 + alpha e (Rabs (m1 - m2))) * (1 + u) * u) by (apply Rmult_le_pos; nra).
    nra. }
  unfold kappa_o, ox.
  exact (division_err n (w1x * o1 + w2x * o2) s sx (w1x * Rabs o1 + w2x * Rabs o2)
           (beta_n e (Rabs (m1 - m2))) (gamma_s e (Rabs (m1 - m2))) d
           Psx T N S Hb (conj Hg0 Hg) Hd).
Qed.

(** merge_step_error_fma: the same bounds when the numerator is contracted into
    fma(w1, o1, rnd(w2 * o2)) (the hypotheses name the fma's exact result instead of the
    product w1 * o1). By symmetry of the bound the other contraction,
    fma(w2, o2, rnd(w1 * o1)), is this theorem with the operands swapped. *)
Theorem merge_step_error_fma :
  forall m1 s1 o1 m2 s2 o2 E1 E2 e_exp,
  fmtb m1 -> fmtb m2 -> 0 <= s1 -> 0 <= s2 -> 0 <= e_exp <= 1 ->
  exp_model e_exp E1 (rnd (m1 - Rmax m1 m2)) ->
  exp_model e_exp E2 (rnd (m2 - Rmax m1 m2)) ->
  no_underflow (s1 * E1) -> no_underflow (s2 * E2) ->
  let w1 := rnd (s1 * E1) in
  let w2 := rnd (s2 * E2) in
  let s := rnd (w1 + w2) in
  let n := rnd (w1 * o1 + rnd (w2 * o2)) in
  no_underflow (w2 * o2) -> no_underflow (w1 * o1 + rnd (w2 * o2)) -> no_underflow (n / s) ->
  let o := rnd (n / s) in
  let w1x := s1 * exp (m1 - Rmax m1 m2) in
  let w2x := s2 * exp (m2 - Rmax m1 m2) in
  let sx := w1x + w2x in
  let ox := (w1x * o1 + w2x * o2) / sx in
  0 < sx -> gamma_s e_exp (Rabs (m1 - m2)) < 1 ->
  Rabs (s - sx) <= gamma_s e_exp (Rabs (m1 - m2)) * sx /\
  Rabs (o - ox) <= kappa_o e_exp (Rabs (m1 - m2)) * ((w1x * Rabs o1 + w2x * Rabs o2) / sx).
Proof.
  intros m1 s1 o1 m2 s2 o2 E1 E2 e F1 F2 Hs1 Hs2 He HE1 HE2 HU1 HU2 w1 w2 s n
    HV1 HV2 HQ o w1x w2x sx ox Psx Hg.
  assert (S : Rabs (s - sx) <= gamma_s e (Rabs (m1 - m2)) * sx)
    by (apply merge_step_error_s; assumption).
  split; [exact S|].
  pose proof (weight_err_gap s1 m1 m2 m1 E1 e F1 F2 (or_introl eq_refl) Hs1 He HE1 HU1) as W1.
  pose proof (weight_err_gap s2 m1 m2 m2 E2 e F1 F2 (or_intror eq_refl) Hs2 He HE2 HU2) as W2.
  fold w1 w2 w1x w2x in W1, W2.
  assert (Ha : 0 <= alpha e (Rabs (m1 - m2))) by (apply alpha_nonneg; [lra|apply Rabs_pos]).
  assert (P1 : 0 <= w1x) by (unfold w1x; pose proof (exp_pos (m1 - Rmax m1 m2)); nra).
  assert (P2 : 0 <= w2x) by (unfold w2x; pose proof (exp_pos (m2 - Rmax m1 m2)); nra).
  pose proof (numerator_fma w1 w2 w1x w2x o1 o2 _ P1 P2 Ha W1 W2 HV1 HV2) as N.
  fold n in N.
  destruct (rnd_rel _ HQ) as [d [Hd R]]. unfold o. rewrite R.
  pose proof u_pos.
  assert (Hg0 : 0 <= gamma_s e (Rabs (m1 - m2))).
  { unfold gamma_s. assert (0 <= alpha e (Rabs (m1 - m2)) * u) by (apply Rmult_le_pos; lra). nra. }
  assert (T : Rabs (w1x * o1 + w2x * o2) <= w1x * Rabs o1 + w2x * Rabs o2).
  { eapply Rle_trans; [apply Rabs_triang|].
    rewrite !Rabs_mult, (Rabs_pos_eq w1x), (Rabs_pos_eq w2x) by lra. lra. }
  assert (Hb : 0 <= beta_n e (Rabs (m1 - m2))).
  { unfold beta_n. assert (0 <= alpha e (Rabs (m1 - m2)) * u) by (apply Rmult_le_pos; lra).
    assert (0 <= (1 + alpha e (Rabs (m1 - m2))) * (1 + u) * u) by (apply Rmult_le_pos; nra).
    nra. }
  unfold kappa_o, ox.
  exact (division_err n (w1x * o1 + w2x * o2) s sx (w1x * Rabs o1 + w2x * Rabs o2)
           (beta_n e (Rabs (m1 - m2))) (gamma_s e (Rabs (m1 - m2))) d
           Psx T N S Hb (conj Hg0 Hg) Hd).
Qed.

(** * A left fold of merges over P partitions *)

(** A partition state (m, s, o), as the attention kernel writes it (already rounded). *)
Definition st3 : Type := (R * R * R)%type.
Definition mm (a : st3) : R := fst (fst a).
Definition ss (a : st3) : R := snd (fst a).
Definition oo (a : st3) : R := snd a.

(** PartitionState::merge in binary32, with [fe] the exp the kernel passes. *)
Definition fl_merge (fe : R -> R) (a b : st3) : st3 :=
  let M := Rmax (mm a) (mm b) in
  let w1 := rnd (ss a * fe (rnd (mm a - M))) in
  let w2 := rnd (ss b * fe (rnd (mm b - M))) in
  let s := rnd (w1 + w2) in
  (M, s, rnd (rnd (rnd (w1 * oo a) + rnd (w2 * oo b)) / s)).

(** The reduce's left fold: the first partition's state is taken as is (merging it into
    the empty state copies it), then each next partition is merged in. *)
Definition fl_fold (fe : R -> R) (first : st3) (rest : list st3) : st3 :=
  fold_left (fl_merge fe) rest first.

(** Hypotheses of one step of the fold, on the values that step computes: the gap between
    the running max and the partition's max is at most G, exp_fn is within e_exp on both
    arguments, and the two weight products do not underflow. *)
Definition step_ok_s (fe : R -> R) (e G : R) (a b : st3) : Prop :=
  let M := Rmax (mm a) (mm b) in
  Rabs (mm a - mm b) <= G /\
  exp_model e (fe (rnd (mm a - M))) (rnd (mm a - M)) /\
  exp_model e (fe (rnd (mm b - M))) (rnd (mm b - M)) /\
  no_underflow (ss a * fe (rnd (mm a - M))) /\
  no_underflow (ss b * fe (rnd (mm b - M))).

Fixpoint fold_ok_s (fe : R -> R) (e G : R) (acc : st3) (rest : list st3) : Prop :=
  match rest with
  | [] => True
  | b :: r => step_ok_s fe e G acc b /\ fold_ok_s fe e G (fl_merge fe acc b) r
  end.

(** Each partition's m is a float and its s is >= 0. *)
Definition input_ok (a : st3) : Prop := fmtb (mm a) /\ 0 <= ss a.

(** The exact exp-sum of the partitions at reference max M: sum_j s_j exp(m_j - M). *)
Fixpoint sig (M : R) (l : list st3) : R :=
  match l with [] => 0 | a :: r => ss a * exp (mm a - M) + sig M r end.

Lemma sig_app : forall M l1 l2, sig M (l1 ++ l2) = sig M l1 + sig M l2.
Proof. intros M l1 l2. induction l1 as [|a r IH]; simpl; [ring|]. rewrite IH. ring. Qed.

Lemma sig_rescale : forall M M' l, sig M' l = sig M l * exp (M - M').
Proof.
  intros M M' l. induction l as [|a r IH]; simpl; [ring|]. rewrite IH.
  replace (exp (mm a - M')) with (exp (mm a - M) * exp (M - M'))
    by (rewrite <- exp_plus; f_equal; ring).
  ring.
Qed.

Lemma sig_nonneg : forall M l, Forall input_ok l -> 0 <= sig M l.
Proof.
  intros M l H. induction H as [|a r [_ Ha] _ IH]; simpl; [lra|].
  pose proof (exp_pos (mm a - M)). nra.
Qed.

Lemma alpha_mono : forall e g G, 0 <= e -> g <= G -> alpha e g <= alpha e G.
Proof.
  intros e g G He H. unfold alpha. pose proof u_pos.
  assert (exp (g * u) <= exp (G * u)) by (apply exp_mono, Rmult_le_compat_r; lra).
  assert (0 < 1 + e) by lra. assert (0 < 1 + u) by lra.
  apply Rplus_le_compat_r. apply Rmult_le_compat_r; [lra|]. apply Rmult_le_compat_r; lra.
Qed.

Lemma gamma_s_mono : forall e g G, 0 <= e -> g <= G -> gamma_s e g <= gamma_s e G.
Proof.
  intros e g G He H. unfold gamma_s. pose proof u_pos. pose proof (alpha_mono e g G He H).
  apply Rplus_le_compat_r. apply Rmult_le_compat_r; lra.
Qed.

Lemma gamma_s_nonneg : forall e G, 0 <= e -> 0 <= G -> 0 <= gamma_s e G.
Proof.
  intros e G He HG. unfold gamma_s. pose proof u_pos. pose proof (alpha_nonneg e G He HG).
  assert (0 <= alpha e G * u) by (apply Rmult_le_pos; lra). nra.
Qed.

Lemma exp_model_nonneg : forall e E d, e <= 1 -> exp_model e E d -> 0 <= E.
Proof.
  intros e E d He H. unfold exp_model in H. apply Rabs_le_inv in H.
  pose proof (exp_pos d). nra.
Qed.

Lemma fold_error_s_gen :
  forall fe e G rest acc done c,
  0 <= e <= 1 -> 0 <= G -> 0 <= c ->
  input_ok acc -> Forall input_ok done -> Forall input_ok rest ->
  fold_ok_s fe e G acc rest ->
  Rabs (ss acc - sig (mm acc) done) <= c * sig (mm acc) done ->
  let r := fl_fold fe acc rest in
  input_ok r /\
  Rabs (ss r - sig (mm r) (done ++ rest))
  <= ((1 + c) * (1 + gamma_s e G) ^ length rest - 1) * sig (mm r) (done ++ rest).
Proof.
  intros fe e G rest. induction rest as [|b rest IH];
    intros acc done c He HG Hc Hacc Hdone Hrest Hok Herr r.
  - unfold r, fl_fold. simpl. rewrite app_nil_r. split; [exact Hacc|].
    replace ((1 + c) * 1 - 1) with c by ring. exact Herr.
  - inversion Hrest as [|b' rest' Hb Hrest' [Eb Erest]]. subst b' rest'.
    destruct Hok as [[Hgap [HE1 [HE2 [HU1 HU2]]]] Hok].
    destruct Hacc as [FM HS]. destruct Hb as [Fb Hsb].
    set (acc' := fl_merge fe acc b).
    set (M' := Rmax (mm acc) (mm b)) in *.
    assert (Hacc' : input_ok acc').
    { split.
      - apply fmtb_max; assumption.
      - change (0 <= rnd (rnd (ss acc * fe (rnd (mm acc - M')))
                            + rnd (ss b * fe (rnd (mm b - M'))))).
        apply rnd_nonneg.
        pose proof (exp_model_nonneg _ _ _ (proj2 He) HE1).
        pose proof (exp_model_nonneg _ _ _ (proj2 He) HE2).
        assert (0 <= rnd (ss acc * fe (rnd (mm acc - M')))) by (apply rnd_nonneg; nra).
        assert (0 <= rnd (ss b * fe (rnd (mm b - M')))) by (apply rnd_nonneg; nra).
        lra. }
    set (g := gamma_s e G).
    assert (Hg : 0 <= g) by (apply gamma_s_nonneg; lra).
    assert (Herr' : Rabs (ss acc' - sig (mm acc') (done ++ [b]))
                    <= ((1 + c) * (1 + g) - 1) * sig (mm acc') (done ++ [b])).
    { pose proof (merge_step_error_s (mm acc) (ss acc) (mm b) (ss b)
                    (fe (rnd (mm acc - M'))) (fe (rnd (mm b - M'))) e
                    FM Fb HS Hsb He HE1 HE2 HU1 HU2) as Step.
      cbv zeta in Step. fold M' in Step.
      assert (Eacc' : ss acc' = rnd (rnd (ss acc * fe (rnd (mm acc - M')))
                                     + rnd (ss b * fe (rnd (mm b - M'))))) by reflexivity.
      assert (Emm : mm acc' = M') by reflexivity.
      rewrite Eacc', Emm.
      set (T := ss acc * exp (mm acc - M') + ss b * exp (mm b - M')) in *.
      assert (Sig : sig M' (done ++ [b]) = sig (mm acc) done * exp (mm acc - M')
                                            + ss b * exp (mm b - M')).
      { rewrite sig_app, (sig_rescale (mm acc) M' done). simpl. ring. }
      pose proof (exp_pos (mm acc - M')) as Pe. pose proof (exp_pos (mm b - M')) as Pb.
      pose proof (sig_nonneg (mm acc) done Hdone) as Pd.
      assert (PS : 0 <= sig M' (done ++ [b])) by (rewrite Sig; nra).
      assert (D1 : Rabs (T - sig M' (done ++ [b])) <= c * sig M' (done ++ [b])).
      { rewrite Sig. unfold T.
        replace (ss acc * exp (mm acc - M') + ss b * exp (mm b - M')
                 - (sig (mm acc) done * exp (mm acc - M') + ss b * exp (mm b - M')))
          with ((ss acc - sig (mm acc) done) * exp (mm acc - M')) by ring.
        rewrite Rabs_mult, (Rabs_pos_eq (exp _)) by lra.
        assert (Rabs (ss acc - sig (mm acc) done) * exp (mm acc - M')
                <= c * sig (mm acc) done * exp (mm acc - M'))
          by (apply Rmult_le_compat_r; lra).
        assert (0 <= c * (ss b * exp (mm b - M'))) by (apply Rmult_le_pos; nra).
        nra. }
      assert (D2 : Rabs (rnd (rnd (ss acc * fe (rnd (mm acc - M')))
                              + rnd (ss b * fe (rnd (mm b - M')))) - T) <= g * Rabs T).
      { eapply Rle_trans; [exact Step|].
        assert (PT : 0 <= T) by (unfold T; nra).
        rewrite (Rabs_pos_eq T PT). apply Rmult_le_compat_r; [exact PT|].
        apply gamma_s_mono; lra. }
      eapply rel_compose; [exact PS|exact Hc|exact Hg|exact D1|exact D2]. }
    assert (Hc' : 0 <= (1 + c) * (1 + g) - 1) by nra.
    destruct (IH acc' (done ++ [b]) ((1 + c) * (1 + g) - 1) He HG Hc' Hacc'
                (proj2 (Forall_app _ _ _) (conj Hdone (Forall_cons _ (conj Fb Hsb) (Forall_nil _))))
                Hrest' Hok Herr') as [Hr Hbound].
    unfold r, fl_fold. simpl. fold acc'. split; [exact Hr|].
    rewrite <- app_assoc in Hbound. simpl in Hbound.
    replace ((1 + c) * ((1 + g) * (1 + g) ^ length rest) - 1)
      with ((1 + ((1 + c) * (1 + g) - 1)) * (1 + g) ^ length rest - 1) by ring.
    exact Hbound.
Qed.

(** fold_error, the (m, s) part: after the reduce's left fold over P = 1 + length rest
    partitions, the computed s is within (1 + gamma_s e_exp G)^(P-1) - 1, relatively, of
    the exact sum_j s_j exp(m_j - M) over the partitions' own (rounded) states, M being the
    computed max, which is exact. *)
Theorem fold_error :
  forall fe e G first rest,
  0 <= e <= 1 -> 0 <= G ->
  Forall input_ok (first :: rest) -> fold_ok_s fe e G first rest ->
  let r := fl_fold fe first rest in
  Rabs (ss r - sig (mm r) (first :: rest))
  <= ((1 + gamma_s e G) ^ length rest - 1) * sig (mm r) (first :: rest).
Proof.
  intros fe e G first rest He HG Hin Hok r.
  inversion Hin as [|f' rest' Hf Hrest [Ef Erest]]. subst f' rest'.
  assert (H0 : Rabs (ss first - sig (mm first) [first]) <= 0 * sig (mm first) [first]).
  { simpl. replace (mm first - mm first) with 0 by ring. rewrite exp_0.
    replace (ss first - (ss first * 1 + 0)) with 0 by ring. rewrite Rabs_R0. lra. }
  destruct (fold_error_s_gen fe e G rest first [first] 0 He HG (Rle_refl 0) Hf
              (Forall_cons _ Hf (Forall_nil _)) Hrest Hok H0) as [_ B].
  replace ((1 + 0) * (1 + gamma_s e G) ^ length rest - 1)
    with ((1 + gamma_s e G) ^ length rest - 1) in B by ring.
  exact B.
Qed.

(** * The o component of the left fold *)

(** Sums over the partitions at reference max M weighted by s_j exp(m_j - M). *)
Fixpoint wsum (f : st3 -> R) (M : R) (l : list st3) : R :=
  match l with [] => 0 | a :: r => ss a * exp (mm a - M) * f a + wsum f M r end.

(** sum_j s_j e^(m_j - M) o_j and sum_j s_j e^(m_j - M) |o_j|: the exact result of the
    reduce is nsum / sig; asum / sig is the magnitude the o error is measured against. *)
Definition nsum := wsum oo.
Definition asum := wsum (fun a => Rabs (oo a)).

Lemma wsum_app : forall f M l1 l2, wsum f M (l1 ++ l2) = wsum f M l1 + wsum f M l2.
Proof. intros f M l1 l2. induction l1 as [|a r IH]; simpl; [ring|]. rewrite IH. ring. Qed.

Lemma wsum_rescale : forall f M M' l, wsum f M' l = wsum f M l * exp (M - M').
Proof.
  intros f M M' l. induction l as [|a r IH]; simpl; [ring|]. rewrite IH.
  replace (exp (mm a - M')) with (exp (mm a - M) * exp (M - M'))
    by (rewrite <- exp_plus; f_equal; ring).
  ring.
Qed.

Lemma asum_nonneg : forall M l, Forall input_ok l -> 0 <= asum M l.
Proof.
  intros M l H. unfold asum. induction H as [|a r [_ Ha] _ IH]; simpl; [lra|].
  pose proof (exp_pos (mm a - M)). pose proof (Rabs_pos (oo a)).
  assert (0 <= ss a * exp (mm a - M)) by nra. nra.
Qed.

Lemma nsum_le_asum : forall M l, Forall input_ok l -> Rabs (nsum M l) <= asum M l.
Proof.
  intros M l H. unfold nsum, asum. induction H as [|a r [_ Ha] _ IH]; simpl.
  - rewrite Rabs_R0. lra.
  - eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult.
    pose proof (exp_pos (mm a - M)).
    rewrite (Rabs_pos_eq (ss a * exp (mm a - M))) by nra. lra.
Qed.

Lemma kappa_o_mono : forall e g G, 0 <= e -> 0 <= g <= G -> gamma_s e G < 1 ->
  kappa_o e g <= kappa_o e G.
Proof.
  intros e g G He Hg H1. unfold kappa_o, beta_n. pose proof u_pos.
  pose proof (alpha_mono e g G He (proj2 Hg)) as A.
  pose proof (gamma_s_mono e g G He (proj2 Hg)) as Gm.
  pose proof (alpha_nonneg e g He (proj1 Hg)).
  apply Rplus_le_compat_r. unfold Rdiv.
  apply Rmult_le_compat.
  - assert (0 <= (1 + alpha e g) * (1 + u) * (1 + u)) by (repeat apply Rmult_le_pos; lra).
    replace (1 + ((1 + alpha e g) * (1 + u) * (1 + u) - 1))
      with ((1 + alpha e g) * (1 + u) * (1 + u)) by ring.
    apply Rmult_le_pos; lra.
  - left. apply Rinv_0_lt_compat. lra.
  - replace (1 + ((1 + alpha e g) * (1 + u) * (1 + u) - 1))
      with ((1 + alpha e g) * (1 + u) * (1 + u)) by ring.
    replace (1 + ((1 + alpha e G) * (1 + u) * (1 + u) - 1))
      with ((1 + alpha e G) * (1 + u) * (1 + u)) by ring.
    apply Rmult_le_compat_r; [lra|]. apply Rmult_le_compat_r; [lra|].
    apply Rmult_le_compat_r; lra.
  - apply Rinv_le_contravar; lra.
Qed.

Lemma kappa_o_nonneg : forall e G, 0 <= e -> 0 <= G -> gamma_s e G < 1 -> 0 <= kappa_o e G.
Proof.
  intros e G He HG H1. unfold kappa_o, beta_n. pose proof u_pos.
  pose proof (alpha_nonneg e G He HG). pose proof (gamma_s_nonneg e G He HG).
  replace (1 + ((1 + alpha e G) * (1 + u) * (1 + u) - 1))
    with ((1 + alpha e G) * (1 + u) * (1 + u)) by ring.
  assert (1 <= (1 + alpha e G) * (1 + u) * (1 + u) * (1 + u)).
  { assert (1 <= (1 + alpha e G) * (1 + u)) by nra.
    assert (1 <= (1 + alpha e G) * (1 + u) * (1 + u)) by nra. nra. }
  assert (/ (1 - gamma_s e G) >= 1).
  { apply Rle_ge. rewrite <- Rinv_1. apply Rinv_le_contravar; lra. }
  unfold Rdiv. nra.
Qed.

(** The further hypotheses of one step for the o component: the two products w_i * o_i
    and the quotient n / s do not underflow. *)
Definition step_ok_o (fe : R -> R) (a b : st3) : Prop :=
  let M := Rmax (mm a) (mm b) in
  let w1 := rnd (ss a * fe (rnd (mm a - M))) in
  let w2 := rnd (ss b * fe (rnd (mm b - M))) in
  let n := rnd (rnd (w1 * oo a) + rnd (w2 * oo b)) in
  no_underflow (w1 * oo a) /\ no_underflow (w2 * oo b) /\ no_underflow (n / rnd (w1 + w2)).

Fixpoint fold_ok (fe : R -> R) (e G : R) (acc : st3) (rest : list st3) : Prop :=
  match rest with
  | [] => True
  | b :: r => step_ok_s fe e G acc b /\ step_ok_o fe acc b /\ fold_ok fe e G (fl_merge fe acc b) r
  end.

Lemma fold_error_o_gen :
  forall fe e G rest acc done c d,
  0 <= e <= 1 -> 0 <= G -> gamma_s e G < 1 -> 0 <= c -> 0 <= d ->
  input_ok acc -> 0 < ss acc -> Forall input_ok done -> Forall input_ok rest ->
  fold_ok fe e G acc rest ->
  Rabs (ss acc - sig (mm acc) done) <= c * sig (mm acc) done ->
  Rabs (oo acc * ss acc - nsum (mm acc) done) <= d * asum (mm acc) done ->
  let r := fl_fold fe acc rest in
  let g := gamma_s e G in
  let k := kappa_o e G in
  input_ok r /\ 0 < ss r /\
  Rabs (ss r - sig (mm r) (done ++ rest))
    <= ((1 + c) * (1 + g) ^ length rest - 1) * sig (mm r) (done ++ rest) /\
  Rabs (oo r * ss r - nsum (mm r) (done ++ rest))
    <= ((1 + d) * ((1 + g) * (1 + k)) ^ length rest - 1) * asum (mm r) (done ++ rest).
Proof.
  intros fe e G rest. induction rest as [|b rest IH];
    intros acc done c d He HG Hg1 Hc Hd Hacc Pacc Hdone Hrest Hok Herr Oerr r g k.
  - unfold r, fl_fold. simpl. rewrite !app_nil_r. repeat split; try apply Hacc; auto.
    + replace ((1 + c) * 1 - 1) with c by ring. exact Herr.
    + replace ((1 + d) * 1 - 1) with d by ring. exact Oerr.
  - inversion Hrest as [|b' rest' Hb Hrest' [Eb Erest]]. subst b' rest'.
    destruct Hok as [[Hgap [HE1 [HE2 [HU1 HU2]]]] [[HV1 [HV2 HQ]] Hok]].
    destruct Hacc as [FM HS]. destruct Hb as [Fb Hsb].
    set (acc' := fl_merge fe acc b) in *.
    set (M' := Rmax (mm acc) (mm b)) in *.
    set (E1 := fe (rnd (mm acc - M'))) in *. set (E2 := fe (rnd (mm b - M'))) in *.
    set (eps := exp (mm acc - M')). set (W := ss b * exp (mm b - M')).
    set (w1x := ss acc * eps). set (sx := w1x + W).
    assert (Pe : 0 < eps) by apply exp_pos.
    assert (PW : 0 <= W)
      by (unfold W; pose proof (exp_pos (mm b - M')); apply Rmult_le_pos; lra).
    assert (Pw1 : 0 < w1x) by (unfold w1x; apply Rmult_lt_0_compat; lra).
    assert (Psx : 0 < sx) by (unfold sx; lra).
    assert (Hk : 0 <= k) by (apply kappa_o_nonneg; lra).
    assert (Hgn : 0 <= g) by (apply gamma_s_nonneg; lra).
    assert (Hg1' : g < 1) by exact Hg1.
    assert (Gg : gamma_s e (Rabs (mm acc - mm b)) <= g) by (apply gamma_s_mono; lra).
    assert (Gk : kappa_o e (Rabs (mm acc - mm b)) <= k)
      by (apply kappa_o_mono; try lra; split; [apply Rabs_pos|exact Hgap]).
    destruct (merge_step_error (mm acc) (ss acc) (oo acc) (mm b) (ss b) (oo b) E1 E2 e
                FM Fb (Rlt_le _ _ Pacc) Hsb He HE1 HE2 HU1 HU2 HV1 HV2 HQ Psx
                ltac:(lra)) as [Ss Os].
    fold M' eps W w1x sx in Ss, Os.
    set (S' := ss acc') in *. set (O' := oo acc') in *.
    assert (ES : S' = rnd (rnd (ss acc * E1) + rnd (ss b * E2))) by reflexivity.
    assert (EO : O' = rnd (rnd (rnd (rnd (ss acc * E1) * oo acc) + rnd (rnd (ss b * E2) * oo b))
                          / rnd (rnd (ss acc * E1) + rnd (ss b * E2)))) by reflexivity.
    rewrite <- ES, <- EO in *.
    assert (Emm : mm acc' = M') by reflexivity.
    (* the s part, as in fold_error *)
    assert (Sig : sig M' (done ++ [b]) = sig (mm acc) done * eps + W).
    { rewrite sig_app, (sig_rescale (mm acc) M' done). simpl. unfold W, eps. ring. }
    pose proof (sig_nonneg (mm acc) done Hdone) as Pd.
    assert (PS : 0 <= sig M' (done ++ [b]))
      by (rewrite Sig; pose proof (Rmult_le_pos _ _ Pd (Rlt_le _ _ Pe)); lra).
    assert (S1 : Rabs (S' - sx) <= g * sx)
      by (eapply Rle_trans; [exact Ss|apply Rmult_le_compat_r; lra]).
    assert (PS' : 0 < S')
      by (apply Rabs_le_inv in S1; pose proof (Rmult_lt_0_compat (1 - g) sx ltac:(lra) Psx); lra).
    assert (Herr' : Rabs (S' - sig M' (done ++ [b]))
                    <= ((1 + c) * (1 + g) - 1) * sig M' (done ++ [b])).
    { assert (D1 : Rabs (sx - sig M' (done ++ [b])) <= c * sig M' (done ++ [b])).
      { rewrite Sig. unfold sx, w1x.
        replace (ss acc * eps + W - (sig (mm acc) done * eps + W))
          with ((ss acc - sig (mm acc) done) * eps) by ring.
        rewrite Rabs_mult, (Rabs_pos_eq eps) by lra.
        assert (Rabs (ss acc - sig (mm acc) done) * eps <= c * sig (mm acc) done * eps)
          by (apply Rmult_le_compat_r; lra).
        assert (0 <= c * W) by (apply Rmult_le_pos; lra). lra. }
      assert (D2 : Rabs (S' - sx) <= g * Rabs sx) by (rewrite (Rabs_pos_eq sx) by lra; exact S1).
      eapply rel_compose; [exact PS|exact Hc|exact Hgn|exact D1|exact D2]. }
    (* the o part, on the unnormalized O * S *)
    set (B := w1x * Rabs (oo acc) + W * Rabs (oo b)).
    assert (Nsum : nsum M' (done ++ [b]) = nsum (mm acc) done * eps + W * oo b).
    { unfold nsum. rewrite wsum_app, (wsum_rescale oo (mm acc) M' done). simpl.
      unfold W, eps. ring. }
    assert (Asum : asum M' (done ++ [b]) = asum (mm acc) done * eps + W * Rabs (oo b)).
    { unfold asum. rewrite wsum_app, (wsum_rescale _ (mm acc) M' done). simpl.
      unfold W, eps. ring. }
    pose proof (asum_nonneg (mm acc) done Hdone) as PA.
    pose proof (nsum_le_asum (mm acc) done Hdone) as NA.
    assert (PoB : 0 <= W * Rabs (oo b)) by (apply Rmult_le_pos; [lra|apply Rabs_pos]).
    assert (PA' : 0 <= asum M' (done ++ [b]))
      by (rewrite Asum; pose proof (Rmult_le_pos _ _ PA (Rlt_le _ _ Pe)); lra).
    set (ox := (w1x * oo acc + W * oo b) / sx) in *.
    assert (Oxs : ox * sx = w1x * oo acc + W * oo b) by (unfold ox; field; lra).
    assert (T1 : Rabs (ox * sx - nsum M' (done ++ [b])) <= d * asum M' (done ++ [b])).
    { rewrite Oxs, Nsum, Asum. unfold w1x.
      replace (ss acc * eps * oo acc + W * oo b - (nsum (mm acc) done * eps + W * oo b))
        with ((oo acc * ss acc - nsum (mm acc) done) * eps) by ring.
      rewrite Rabs_mult, (Rabs_pos_eq eps) by lra.
      assert (Rabs (oo acc * ss acc - nsum (mm acc) done) * eps <= d * asum (mm acc) done * eps)
        by (apply Rmult_le_compat_r; lra).
      assert (0 <= d * (W * Rabs (oo b))) by (apply Rmult_le_pos; lra). lra. }
    assert (T2 : B <= (1 + d) * asum M' (done ++ [b])).
    { rewrite Asum. unfold B, w1x.
      assert (Rabs (oo acc * ss acc) <= (1 + d) * asum (mm acc) done).
      { replace (oo acc * ss acc) with ((oo acc * ss acc - nsum (mm acc) done) + nsum (mm acc) done)
          by ring.
        eapply Rle_trans; [apply Rabs_triang|]. lra. }
      rewrite Rabs_mult, (Rabs_pos_eq (ss acc)) in H by lra.
      assert (ss acc * eps * Rabs (oo acc) <= (1 + d) * asum (mm acc) done * eps).
      { replace (ss acc * eps * Rabs (oo acc)) with (Rabs (oo acc) * ss acc * eps) by ring.
        apply Rmult_le_compat_r; lra. }
      assert (0 <= d * (W * Rabs (oo b))) by (apply Rmult_le_pos; lra).
      lra. }
    assert (T3 : Rabs (O' * S' - ox * sx) <= B * (k * (1 + g) + g)).
    { replace (O' * S' - ox * sx) with ((O' - ox) * S' + ox * (S' - sx)) by ring.
      eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult, (Rabs_pos_eq S') by lra.
      assert (Oxb : Rabs ox <= B / sx).
      { unfold ox. unfold Rdiv. rewrite Rabs_mult, Rabs_inv, (Rabs_pos_eq sx) by lra.
        apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat; lra|].
        unfold B. eapply Rle_trans; [apply Rabs_triang|].
        rewrite !Rabs_mult, (Rabs_pos_eq w1x), (Rabs_pos_eq W) by lra. lra. }
      assert (PB : 0 <= B).
      { unfold B. pose proof (Rmult_le_pos _ _ (Rlt_le _ _ Pw1) (Rabs_pos (oo acc))).
        pose proof (Rmult_le_pos _ _ PW (Rabs_pos (oo b))). lra. }
      assert (E1b : Rabs (O' - ox) <= k * (B / sx)).
      { eapply Rle_trans; [exact Os|]. apply Rmult_le_compat_r; [|exact Gk].
        unfold Rdiv. apply Rmult_le_pos; [exact PB|left; apply Rinv_0_lt_compat; lra]. }
      assert (S'b : S' <= (1 + g) * sx) by (apply Rabs_le_inv in S1; lra).
      assert (Rabs (O' - ox) * S' <= k * (B / sx) * ((1 + g) * sx)).
      { apply Rmult_le_compat; try lra; apply Rabs_pos. }
      assert (Rabs ox * Rabs (S' - sx) <= B / sx * (g * sx)).
      { apply Rmult_le_compat; try apply Rabs_pos; lra. }
      replace (k * (B / sx) * ((1 + g) * sx)) with (B * k * (1 + g)) in * by (field; lra).
      replace (B / sx * (g * sx)) with (B * g) in * by (field; lra).
      lra. }
    assert (Oerr' : Rabs (oo acc' * ss acc' - nsum (mm acc') (done ++ [b]))
                    <= ((1 + d) * ((1 + g) * (1 + k)) - 1) * asum (mm acc') (done ++ [b])).
    { rewrite Emm. fold S' O'.
      replace (O' * S' - nsum M' (done ++ [b]))
        with ((O' * S' - ox * sx) + (ox * sx - nsum M' (done ++ [b]))) by ring.
      eapply Rle_trans; [apply Rabs_triang|].
      assert (B * (k * (1 + g) + g) <= (1 + d) * asum M' (done ++ [b]) * (k * (1 + g) + g))
        by (apply Rmult_le_compat_r; [pose proof (Rmult_le_pos k (1 + g) Hk ltac:(lra)); lra|exact T2]).
      replace (((1 + d) * ((1 + g) * (1 + k)) - 1) * asum M' (done ++ [b]))
        with (d * asum M' (done ++ [b]) + (1 + d) * asum M' (done ++ [b]) * (k * (1 + g) + g))
        by ring.
      lra. }
    assert (Hacc' : input_ok acc') by (split; [apply fmtb_max; assumption|change (0 <= S'); lra]).
    assert (Hc' : 0 <= (1 + c) * (1 + g) - 1) by (pose proof (Rmult_le_pos c g Hc Hgn); lra).
    assert (Hd' : 0 <= (1 + d) * ((1 + g) * (1 + k)) - 1).
    { assert (X1 : 1 <= (1 + g) * (1 + k)) by (pose proof (Rmult_le_pos g k Hgn Hk); lra).
      pose proof (Rmult_le_pos d ((1 + g) * (1 + k)) Hd ltac:(lra)). lra. }
    change (Rabs (ss acc' - sig (mm acc') (done ++ [b])) <= ((1 + c) * (1 + g) - 1) * sig (mm acc') (done ++ [b])) in Herr'.
    destruct (IH acc' (done ++ [b]) ((1 + c) * (1 + g) - 1) ((1 + d) * ((1 + g) * (1 + k)) - 1)
                He HG Hg1 Hc' Hd' Hacc' PS'
                (proj2 (Forall_app _ _ _) (conj Hdone (Forall_cons _ (conj Fb Hsb) (Forall_nil _))))
                Hrest' Hok Herr' Oerr') as [Hr [Pr [Hb1 Hb2]]].
    unfold r, fl_fold. simpl. fold acc'. rewrite <- app_assoc in Hb1, Hb2. simpl in Hb1, Hb2.
    split; [exact Hr|]. split; [exact Pr|]. split.
    + replace ((1 + c) * ((1 + g) * (1 + g) ^ length rest) - 1)
        with ((1 + ((1 + c) * (1 + g) - 1)) * (1 + g) ^ length rest - 1) by ring.
      exact Hb1.
    + replace ((1 + d) * ((1 + g) * (1 + k) * ((1 + g) * (1 + k)) ^ length rest) - 1)
        with ((1 + ((1 + d) * ((1 + g) * (1 + k)) - 1)) * ((1 + g) * (1 + k)) ^ length rest - 1)
        by ring.
      exact Hb2.
Qed.

(** fold_error_o: after the reduce's left fold over P = 1 + length rest non-empty
    partitions, with g = gamma_s e_exp G, k = kappa_o e_exp G, n = P - 1,
    c = (1 + g)^n - 1 and d = ((1 + g)(1 + k))^n - 1 (c < 1 assumed), the computed s and o
    satisfy
      |s - sig| <= c * sig,
      |o - nsum/sig| <= (d + c) / (1 - c) * asum/sig,
    where nsum/sig is the exact merge of the partitions' own (rounded) states, i.e. the
    exact reduce, and asum/sig the same with |o_j|. *)
Theorem fold_error_o :
  forall fe e G first rest,
  0 <= e <= 1 -> 0 <= G -> gamma_s e G < 1 ->
  Forall input_ok (first :: rest) -> 0 < ss first -> fold_ok fe e G first rest ->
  let r := fl_fold fe first rest in
  let all := first :: rest in
  let c := (1 + gamma_s e G) ^ length rest - 1 in
  let d := ((1 + gamma_s e G) * (1 + kappa_o e G)) ^ length rest - 1 in
  c < 1 ->
  Rabs (ss r - sig (mm r) all) <= c * sig (mm r) all /\
  Rabs (oo r - nsum (mm r) all / sig (mm r) all)
    <= (d + c) / (1 - c) * (asum (mm r) all / sig (mm r) all).
Proof.
  intros fe e G first rest He HG Hg1 Hin Pf Hok r all c d Hc1.
  inversion Hin as [|f' rest' Hf Hrest [Ef Erest]]. subst f' rest'.
  assert (E0 : exp (mm first - mm first) = 1)
    by (replace (mm first - mm first) with 0 by ring; apply exp_0).
  assert (H0 : Rabs (ss first - sig (mm first) [first]) <= 0 * sig (mm first) [first]).
  { simpl. rewrite E0. replace (ss first - (ss first * 1 + 0)) with 0 by ring.
    rewrite Rabs_R0. lra. }
  assert (O0 : Rabs (oo first * ss first - nsum (mm first) [first])
               <= 0 * asum (mm first) [first]).
  { unfold nsum. simpl. rewrite E0.
    replace (oo first * ss first - (ss first * 1 * oo first + 0)) with 0 by ring.
    rewrite Rabs_R0. unfold asum. simpl. lra. }
  destruct (fold_error_o_gen fe e G rest first [first] 0 0 He HG Hg1 (Rle_refl 0) (Rle_refl 0)
              Hf Pf (Forall_cons _ Hf (Forall_nil _)) Hrest Hok H0 O0) as [Hr [Pr [Bs Bo]]].
  fold r in Hr, Pr, Bs, Bo. simpl app in Bs, Bo. fold all in Bs, Bo.
  replace ((1 + 0) * (1 + gamma_s e G) ^ length rest - 1) with c in Bs by (unfold c; ring).
  replace ((1 + 0) * ((1 + gamma_s e G) * (1 + kappa_o e G)) ^ length rest - 1) with d in Bo
    by (unfold d; ring).
  split; [exact Bs|].
  assert (Hc0 : 0 <= c).
  { unfold c. pose proof (gamma_s_nonneg e G (proj1 He) HG).
    assert (1 <= (1 + gamma_s e G) ^ length rest) by (apply pow_R1_Rle; lra). lra. }
  assert (Hd0 : 0 <= d).
  { unfold d. pose proof (gamma_s_nonneg e G (proj1 He) HG).
    pose proof (kappa_o_nonneg e G (proj1 He) HG Hg1).
    assert (1 <= (1 + gamma_s e G) * (1 + kappa_o e G)) by nra.
    assert (1 <= ((1 + gamma_s e G) * (1 + kappa_o e G)) ^ length rest)
      by (apply pow_R1_Rle; lra). lra. }
  set (Sg := sig (mm r) all) in *. set (N := nsum (mm r) all) in *.
  set (A := asum (mm r) all) in *. set (S := ss r) in *. set (O := oo r) in *.
  assert (PSg : 0 < Sg).
  { unfold Sg, all. simpl. pose proof (exp_pos (mm first - mm r)).
    pose proof (sig_nonneg (mm r) rest Hrest). destruct Hf. nra. }
  assert (PA : 0 <= A) by (apply asum_nonneg; exact Hin).
  assert (LS : (1 - c) * Sg <= S) by (apply Rabs_le_inv in Bs; lra).
  assert (PN : Rabs N <= A) by (apply nsum_le_asum; exact Hin).
  replace (O - N / Sg) with (((O * S - N) * Sg - N * (S - Sg)) / (S * Sg)) by (field; lra).
  unfold Rdiv at 1. rewrite Rabs_mult, Rabs_inv, (Rabs_pos_eq (S * Sg)) by nra.
  assert (Num : Rabs ((O * S - N) * Sg - N * (S - Sg)) <= (d + c) * A * Sg).
  { unfold Rminus at 1. eapply Rle_trans; [apply Rabs_triang|].
    rewrite Rabs_Ropp, !Rabs_mult, (Rabs_pos_eq Sg) by lra.
    assert (Rabs (O * S - N) * Sg <= d * A * Sg) by (apply Rmult_le_compat_r; lra).
    assert (Rabs N * Rabs (S - Sg) <= A * (c * Sg))
      by (apply Rmult_le_compat; try apply Rabs_pos; lra).
    lra. }
  assert (P1c : 0 < (1 - c) * Sg) by (apply Rmult_lt_0_compat; lra).
  apply Rle_trans with ((d + c) * A * Sg * / ((1 - c) * Sg * Sg)).
  - apply Rmult_le_compat; [apply Rabs_pos|left; apply Rinv_0_lt_compat; nra|exact Num|].
    apply Rinv_le_contravar; [apply Rmult_lt_0_compat; lra|].
    apply Rmult_le_compat_r; lra.
  - right. field. lra.
Qed.

(** * Any reduction tree over the partitions *)

(** One merge of two computed states, each carrying the errors of its own subtree (c on s,
    d on the unnormalized o * s) against the exact sums of its partitions La, Lb. *)
Lemma merge_step_fold :
  forall fe e G a b La Lb c d,
  0 <= e <= 1 -> 0 <= G -> gamma_s e G < 1 -> 0 <= c -> 0 <= d ->
  input_ok a -> input_ok b -> 0 < ss a -> 0 < ss b ->
  Forall input_ok La -> Forall input_ok Lb ->
  step_ok_s fe e G a b -> step_ok_o fe a b ->
  Rabs (ss a - sig (mm a) La) <= c * sig (mm a) La ->
  Rabs (ss b - sig (mm b) Lb) <= c * sig (mm b) Lb ->
  Rabs (oo a * ss a - nsum (mm a) La) <= d * asum (mm a) La ->
  Rabs (oo b * ss b - nsum (mm b) Lb) <= d * asum (mm b) Lb ->
  let r := fl_merge fe a b in
  let g := gamma_s e G in
  let k := kappa_o e G in
  input_ok r /\ 0 < ss r /\
  Rabs (ss r - sig (mm r) (La ++ Lb)) <= ((1 + c) * (1 + g) - 1) * sig (mm r) (La ++ Lb) /\
  Rabs (oo r * ss r - nsum (mm r) (La ++ Lb))
    <= ((1 + d) * ((1 + g) * (1 + k)) - 1) * asum (mm r) (La ++ Lb).
Proof.
  intros fe e G a b La Lb c d He HG Hg1 Hc Hd [Fa Ha] [Fb Hb] Pa Pb HLa HLb
    [Hgap [HE1 [HE2 [HU1 HU2]]]] [HV1 [HV2 HQ]] Sa Sb Oa Ob r g k.
  set (M' := Rmax (mm a) (mm b)) in *.
  set (E1 := fe (rnd (mm a - M'))) in *. set (E2 := fe (rnd (mm b - M'))) in *.
  set (e1 := exp (mm a - M')). set (e2 := exp (mm b - M')).
  set (w1x := ss a * e1). set (w2x := ss b * e2). set (sx := w1x + w2x).
  assert (P1 : 0 < e1) by apply exp_pos. assert (P2 : 0 < e2) by apply exp_pos.
  assert (Pw1 : 0 < w1x) by (unfold w1x; apply Rmult_lt_0_compat; lra).
  assert (Pw2 : 0 < w2x) by (unfold w2x; apply Rmult_lt_0_compat; lra).
  assert (Psx : 0 < sx) by (unfold sx; lra).
  assert (Hk : 0 <= k) by (apply kappa_o_nonneg; lra).
  assert (Hgn : 0 <= g) by (apply gamma_s_nonneg; lra).
  assert (Hg1' : g < 1) by exact Hg1.
  assert (Gg : gamma_s e (Rabs (mm a - mm b)) <= g) by (apply gamma_s_mono; lra).
  assert (Gk : kappa_o e (Rabs (mm a - mm b)) <= k)
    by (apply kappa_o_mono; try lra; split; [apply Rabs_pos|exact Hgap]).
  destruct (merge_step_error (mm a) (ss a) (oo a) (mm b) (ss b) (oo b) E1 E2 e
              Fa Fb Ha Hb He HE1 HE2 HU1 HU2 HV1 HV2 HQ Psx ltac:(lra)) as [Ss Os].
  fold M' e1 e2 w1x w2x sx in Ss, Os.
  set (S' := ss r). set (O' := oo r).
  assert (ES : S' = rnd (rnd (ss a * E1) + rnd (ss b * E2))) by reflexivity.
  assert (EO : O' = rnd (rnd (rnd (rnd (ss a * E1) * oo a) + rnd (rnd (ss b * E2) * oo b))
                        / rnd (rnd (ss a * E1) + rnd (ss b * E2)))) by reflexivity.
  rewrite <- ES, <- EO in *.
  assert (Emm : mm r = M') by reflexivity. rewrite Emm.
  set (sA := sig (mm a) La) in *. set (sB := sig (mm b) Lb) in *.
  set (nA := nsum (mm a) La) in *. set (nB := nsum (mm b) Lb) in *.
  set (aA := asum (mm a) La) in *. set (aB := asum (mm b) Lb) in *.
  assert (Sig : sig M' (La ++ Lb) = sA * e1 + sB * e2).
  { rewrite sig_app, (sig_rescale (mm a) M' La), (sig_rescale (mm b) M' Lb). reflexivity. }
  assert (Nsum : nsum M' (La ++ Lb) = nA * e1 + nB * e2).
  { unfold nsum. rewrite wsum_app, (wsum_rescale oo (mm a) M' La), (wsum_rescale oo (mm b) M' Lb).
    reflexivity. }
  assert (Asum : asum M' (La ++ Lb) = aA * e1 + aB * e2).
  { unfold asum. rewrite wsum_app, (wsum_rescale _ (mm a) M' La), (wsum_rescale _ (mm b) M' Lb).
    reflexivity. }
  pose proof (sig_nonneg (mm a) La HLa) as PsA. pose proof (sig_nonneg (mm b) Lb HLb) as PsB.
  pose proof (asum_nonneg (mm a) La HLa) as PaA. pose proof (asum_nonneg (mm b) Lb HLb) as PaB.
  pose proof (nsum_le_asum (mm a) La HLa) as NA. pose proof (nsum_le_asum (mm b) Lb HLb) as NB.
  fold sA nA aA in PsA, PaA, NA. fold sB nB aB in PsB, PaB, NB.
  pose proof (Rmult_le_pos _ _ PsA (Rlt_le _ _ P1)). pose proof (Rmult_le_pos _ _ PsB (Rlt_le _ _ P2)).
  pose proof (Rmult_le_pos _ _ PaA (Rlt_le _ _ P1)). pose proof (Rmult_le_pos _ _ PaB (Rlt_le _ _ P2)).
  assert (S1 : Rabs (S' - sx) <= g * sx)
    by (eapply Rle_trans; [exact Ss|apply Rmult_le_compat_r; lra]).
  assert (PS' : 0 < S')
    by (apply Rabs_le_inv in S1; pose proof (Rmult_lt_0_compat (1 - g) sx ltac:(lra) Psx); lra).
  (* |e1 X + e2 Y| <= e1 |X| + e2 |Y| *)
  assert (Comb : forall X Y, Rabs (X * e1 + Y * e2) <= Rabs X * e1 + Rabs Y * e2).
  { intros X Y. eapply Rle_trans; [apply Rabs_triang|].
    rewrite !Rabs_mult, (Rabs_pos_eq e1), (Rabs_pos_eq e2) by lra. lra. }
  assert (Herr' : Rabs (S' - sig M' (La ++ Lb)) <= ((1 + c) * (1 + g) - 1) * sig M' (La ++ Lb)).
  { assert (D1 : Rabs (sx - sig M' (La ++ Lb)) <= c * sig M' (La ++ Lb)).
    { rewrite Sig. unfold sx, w1x, w2x.
      replace (ss a * e1 + ss b * e2 - (sA * e1 + sB * e2))
        with ((ss a - sA) * e1 + (ss b - sB) * e2) by ring.
      eapply Rle_trans; [apply Comb|].
      assert (Rabs (ss a - sA) * e1 <= c * sA * e1) by (apply Rmult_le_compat_r; lra).
      assert (Rabs (ss b - sB) * e2 <= c * sB * e2) by (apply Rmult_le_compat_r; lra).
      lra. }
    assert (D2 : Rabs (S' - sx) <= g * Rabs sx) by (rewrite (Rabs_pos_eq sx) by lra; exact S1).
    assert (PS : 0 <= sig M' (La ++ Lb)) by (rewrite Sig; lra).
    eapply rel_compose; [exact PS|exact Hc|exact Hgn|exact D1|exact D2]. }
  set (B := w1x * Rabs (oo a) + w2x * Rabs (oo b)).
  set (ox := (w1x * oo a + w2x * oo b) / sx) in *.
  assert (Oxs : ox * sx = w1x * oo a + w2x * oo b) by (unfold ox; field; lra).
  assert (T1 : Rabs (ox * sx - nsum M' (La ++ Lb)) <= d * asum M' (La ++ Lb)).
  { rewrite Oxs, Nsum, Asum. unfold w1x, w2x.
    replace (ss a * e1 * oo a + ss b * e2 * oo b - (nA * e1 + nB * e2))
      with ((oo a * ss a - nA) * e1 + (oo b * ss b - nB) * e2) by ring.
    eapply Rle_trans; [apply Comb|].
    assert (Rabs (oo a * ss a - nA) * e1 <= d * aA * e1) by (apply Rmult_le_compat_r; lra).
    assert (Rabs (oo b * ss b - nB) * e2 <= d * aB * e2) by (apply Rmult_le_compat_r; lra).
    lra. }
  assert (T2 : B <= (1 + d) * asum M' (La ++ Lb)).
  { rewrite Asum. unfold B, w1x, w2x.
    assert (QA : Rabs (oo a) * ss a <= (1 + d) * aA).
    { rewrite <- (Rabs_pos_eq (ss a)) at 1 by lra. rewrite <- Rabs_mult.
      replace (oo a * ss a) with ((oo a * ss a - nA) + nA) by ring.
      eapply Rle_trans; [apply Rabs_triang|]. lra. }
    assert (QB : Rabs (oo b) * ss b <= (1 + d) * aB).
    { rewrite <- (Rabs_pos_eq (ss b)) at 1 by lra. rewrite <- Rabs_mult.
      replace (oo b * ss b) with ((oo b * ss b - nB) + nB) by ring.
      eapply Rle_trans; [apply Rabs_triang|]. lra. }
    assert (Rabs (oo a) * ss a * e1 <= (1 + d) * aA * e1) by (apply Rmult_le_compat_r; lra).
    assert (Rabs (oo b) * ss b * e2 <= (1 + d) * aB * e2) by (apply Rmult_le_compat_r; lra).
    replace (ss a * e1 * Rabs (oo a) + ss b * e2 * Rabs (oo b))
      with (Rabs (oo a) * ss a * e1 + Rabs (oo b) * ss b * e2) by ring.
    lra. }
  assert (PB : 0 <= B).
  { unfold B. pose proof (Rmult_le_pos _ _ (Rlt_le _ _ Pw1) (Rabs_pos (oo a))).
    pose proof (Rmult_le_pos _ _ (Rlt_le _ _ Pw2) (Rabs_pos (oo b))). lra. }
  assert (T3 : Rabs (O' * S' - ox * sx) <= B * (k * (1 + g) + g)).
  { replace (O' * S' - ox * sx) with ((O' - ox) * S' + ox * (S' - sx)) by ring.
    eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult, (Rabs_pos_eq S') by lra.
    assert (Oxb : Rabs ox <= B / sx).
    { unfold ox. unfold Rdiv. rewrite Rabs_mult, Rabs_inv, (Rabs_pos_eq sx) by lra.
      apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat; lra|].
      unfold B. eapply Rle_trans; [apply Rabs_triang|].
      rewrite !Rabs_mult, (Rabs_pos_eq w1x), (Rabs_pos_eq w2x) by lra. lra. }
    assert (E1b : Rabs (O' - ox) <= k * (B / sx)).
    { eapply Rle_trans; [exact Os|]. apply Rmult_le_compat_r; [|exact Gk].
      unfold Rdiv. apply Rmult_le_pos; [exact PB|left; apply Rinv_0_lt_compat; lra]. }
    assert (S'b : S' <= (1 + g) * sx) by (apply Rabs_le_inv in S1; lra).
    assert (Rabs (O' - ox) * S' <= k * (B / sx) * ((1 + g) * sx)).
    { apply Rmult_le_compat; try lra; apply Rabs_pos. }
    assert (Rabs ox * Rabs (S' - sx) <= B / sx * (g * sx)).
    { apply Rmult_le_compat; try apply Rabs_pos; lra. }
    replace (k * (B / sx) * ((1 + g) * sx)) with (B * k * (1 + g)) in * by (field; lra).
    replace (B / sx * (g * sx)) with (B * g) in * by (field; lra).
    lra. }
  split; [split; [apply fmtb_max; assumption|change (0 <= S'); lra]|]. split; [exact PS'|]. split; [exact Herr'|].
  replace (O' * S' - nsum M' (La ++ Lb))
    with ((O' * S' - ox * sx) + (ox * sx - nsum M' (La ++ Lb))) by ring.
  eapply Rle_trans; [apply Rabs_triang|].
  assert (B * (k * (1 + g) + g) <= (1 + d) * asum M' (La ++ Lb) * (k * (1 + g) + g))
    by (apply Rmult_le_compat_r; [pose proof (Rmult_le_pos k (1 + g) Hk ltac:(lra)); lra|exact T2]).
  replace (((1 + d) * ((1 + g) * (1 + k)) - 1) * asum M' (La ++ Lb))
    with (d * asum M' (La ++ Lb) + (1 + d) * asum M' (La ++ Lb) * (k * (1 + g) + g)) by ring.
  lra.
Qed.

Lemma normalize_err : forall O S Sg N A c d,
  0 < Sg -> 0 <= c < 1 -> 0 <= d -> Rabs N <= A ->
  Rabs (S - Sg) <= c * Sg -> Rabs (O * S - N) <= d * A ->
  Rabs (O - N / Sg) <= (d + c) / (1 - c) * (A / Sg).
Proof.
  intros O S Sg N A c d PSg Hc Hd PN Bs Bo.
  assert (PA : 0 <= A) by (pose proof (Rabs_pos N); lra).
  assert (LS : (1 - c) * Sg <= S) by (apply Rabs_le_inv in Bs; lra).
  assert (P1c : 0 < (1 - c) * Sg) by (apply Rmult_lt_0_compat; lra).
  replace (O - N / Sg) with (((O * S - N) * Sg - N * (S - Sg)) / (S * Sg)) by (field; lra).
  unfold Rdiv at 1. rewrite Rabs_mult, Rabs_inv, (Rabs_pos_eq (S * Sg))
    by (apply Rmult_le_pos; lra).
  assert (Num : Rabs ((O * S - N) * Sg - N * (S - Sg)) <= (d + c) * A * Sg).
  { unfold Rminus at 1. eapply Rle_trans; [apply Rabs_triang|].
    rewrite Rabs_Ropp, !Rabs_mult, (Rabs_pos_eq Sg) by lra.
    assert (Rabs (O * S - N) * Sg <= d * A * Sg) by (apply Rmult_le_compat_r; lra).
    assert (Rabs N * Rabs (S - Sg) <= A * (c * Sg))
      by (apply Rmult_le_compat; try apply Rabs_pos; lra).
    lra. }
  apply Rle_trans with ((d + c) * A * Sg * / ((1 - c) * Sg * Sg)).
  - apply Rmult_le_compat; [apply Rabs_pos|left; apply Rinv_0_lt_compat; apply Rmult_lt_0_compat; lra
                           |exact Num|].
    apply Rinv_le_contravar; [apply Rmult_lt_0_compat; lra|].
    apply Rmult_le_compat_r; lra.
  - right. field. lra.
Qed.

(** A reduction tree whose leaves are the partitions' (rounded) states, merged in binary32
    at every node; [rdepth] is the number of merges on the longest root-to-leaf path. *)
Inductive rtree : Type := RLeaf (a : st3) | RNode (l r : rtree).

Fixpoint rleaves (t : rtree) : list st3 :=
  match t with RLeaf a => [a] | RNode l r => rleaves l ++ rleaves r end.

Fixpoint rfl (fe : R -> R) (t : rtree) : st3 :=
  match t with RLeaf a => a | RNode l r => fl_merge fe (rfl fe l) (rfl fe r) end.

Fixpoint rdepth (t : rtree) : nat :=
  match t with RLeaf _ => 0 | RNode l r => S (Nat.max (rdepth l) (rdepth r)) end.

Fixpoint rok (fe : R -> R) (e G : R) (t : rtree) : Prop :=
  match t with
  | RLeaf _ => True
  | RNode l r => rok fe e G l /\ rok fe e G r /\
                 step_ok_s fe e G (rfl fe l) (rfl fe r) /\ step_ok_o fe (rfl fe l) (rfl fe r)
  end.

Lemma rleaves_nonempty : forall t, rleaves t <> [].
Proof.
  induction t as [a|l IHl r IHr]; simpl; [discriminate|].
  intros H. apply app_eq_nil in H. destruct H as [H _]. exact (IHl H).
Qed.

Definition leaf_ok (a : st3) : Prop := input_ok a /\ 0 < ss a.

Lemma tree_error_gen :
  forall fe e G t,
  0 <= e <= 1 -> 0 <= G -> gamma_s e G < 1 ->
  Forall leaf_ok (rleaves t) -> rok fe e G t ->
  let r := rfl fe t in
  let g := gamma_s e G in
  let k := kappa_o e G in
  input_ok r /\ 0 < ss r /\
  Rabs (ss r - sig (mm r) (rleaves t)) <= ((1 + g) ^ rdepth t - 1) * sig (mm r) (rleaves t) /\
  Rabs (oo r * ss r - nsum (mm r) (rleaves t))
    <= (((1 + g) * (1 + k)) ^ rdepth t - 1) * asum (mm r) (rleaves t).
Proof.
  intros fe e G t He HG Hg1. induction t as [a|l IHl rt IHr]; intros Hl Hok r g k.
  - inversion Hl as [|a' l' [Ha Pa] _]. subst. unfold r. cbn [rfl rleaves rdepth].
    assert (E0 : exp (mm a - mm a) = 1)
      by (replace (mm a - mm a) with 0 by ring; apply exp_0).
    assert (Z1 : sig (mm a) [a] = ss a) by (simpl; rewrite E0; ring).
    assert (Z2 : nsum (mm a) [a] = oo a * ss a) by (unfold nsum; simpl; rewrite E0; ring).
    rewrite Z1, Z2, !pow_O.
    replace (ss a - ss a) with 0 by ring. replace (oo a * ss a - oo a * ss a) with 0 by ring.
    rewrite Rabs_R0.
    pose proof (asum_nonneg (mm a) [a] (Forall_cons _ Ha (Forall_nil _))).
    repeat split; try apply Ha; try lra.
  - simpl in Hl. apply Forall_app in Hl. destruct Hl as [Hl1 Hl2].
    destruct Hok as [Okl [Okr [Ss So]]].
    destruct (IHl Hl1 Okl) as [Il [Pl [Sl Ol]]]. destruct (IHr Hl2 Okr) as [Ir [Pr [Sr Or]]].
    fold g k in Sl, Ol, Sr, Or.
    assert (Hgn : 0 <= g) by (apply gamma_s_nonneg; lra).
    assert (Hk : 0 <= k) by (apply kappa_o_nonneg; lra).
    set (D := Nat.max (rdepth l) (rdepth rt)).
    assert (G1 : 1 <= 1 + g) by lra.
    assert (K1 : 1 <= (1 + g) * (1 + k)) by (pose proof (Rmult_le_pos g k Hgn Hk); lra).
    assert (Mono : forall x n, 1 <= x -> (n <= D)%nat -> x ^ n - 1 <= x ^ D - 1).
    { intros x n Hx Hn. apply Rplus_le_compat_r. apply Rle_pow; assumption. }
    assert (Nn : forall x n, 1 <= x -> 0 <= x ^ n - 1).
    { intros x n Hx. pose proof (pow_R1_Rle x n Hx). lra. }
    assert (Dl : (rdepth l <= D)%nat) by apply Nat.le_max_l.
    assert (Dr : (rdepth rt <= D)%nat) by apply Nat.le_max_r.
    set (c := (1 + g) ^ D - 1). set (d := ((1 + g) * (1 + k)) ^ D - 1).
    pose proof (sig_nonneg (mm (rfl fe l)) (rleaves l)
                  (Forall_impl _ (fun a (H : leaf_ok a) => proj1 H) Hl1)) as PsL.
    pose proof (sig_nonneg (mm (rfl fe rt)) (rleaves rt)
                  (Forall_impl _ (fun a (H : leaf_ok a) => proj1 H) Hl2)) as PsR.
    pose proof (asum_nonneg (mm (rfl fe l)) (rleaves l)
                  (Forall_impl _ (fun a (H : leaf_ok a) => proj1 H) Hl1)) as PaL.
    pose proof (asum_nonneg (mm (rfl fe rt)) (rleaves rt)
                  (Forall_impl _ (fun a (H : leaf_ok a) => proj1 H) Hl2)) as PaR.
    assert (Sl' : Rabs (ss (rfl fe l) - sig (mm (rfl fe l)) (rleaves l))
                  <= c * sig (mm (rfl fe l)) (rleaves l))
      by (eapply Rle_trans; [exact Sl|apply Rmult_le_compat_r; [lra|apply Mono; auto]]).
    assert (Sr' : Rabs (ss (rfl fe rt) - sig (mm (rfl fe rt)) (rleaves rt))
                  <= c * sig (mm (rfl fe rt)) (rleaves rt))
      by (eapply Rle_trans; [exact Sr|apply Rmult_le_compat_r; [lra|apply Mono; auto]]).
    assert (Ol' : Rabs (oo (rfl fe l) * ss (rfl fe l) - nsum (mm (rfl fe l)) (rleaves l))
                  <= d * asum (mm (rfl fe l)) (rleaves l))
      by (eapply Rle_trans; [exact Ol|apply Rmult_le_compat_r; [lra|apply Mono; auto]]).
    assert (Or' : Rabs (oo (rfl fe rt) * ss (rfl fe rt) - nsum (mm (rfl fe rt)) (rleaves rt))
                  <= d * asum (mm (rfl fe rt)) (rleaves rt))
      by (eapply Rle_trans; [exact Or|apply Rmult_le_compat_r; [lra|apply Mono; auto]]).
    destruct (merge_step_fold fe e G (rfl fe l) (rfl fe rt) (rleaves l) (rleaves rt) c d
                He HG Hg1 (Nn _ _ G1) (Nn _ _ K1) Il Ir Pl Pr
                (Forall_impl _ (fun a (H : leaf_ok a) => proj1 H) Hl1)
                (Forall_impl _ (fun a (H : leaf_ok a) => proj1 H) Hl2)
                Ss So Sl' Sr' Ol' Or') as [H1 [H2 [H3 H4]]].
    unfold r. simpl rfl. simpl rleaves. simpl rdepth. fold D.
    split; [exact H1|]. split; [exact H2|]. split.
    + replace ((1 + g) ^ S D - 1) with ((1 + c) * (1 + g) - 1) by (unfold c; simpl; ring).
      exact H3.
    + replace (((1 + g) * (1 + k)) ^ S D - 1) with ((1 + d) * ((1 + g) * (1 + k)) - 1)
        by (unfold d; simpl; ring).
      exact H4.
Qed.

(** fold_error_tree: the reduce as any binary tree over the P partitions (pairwise, left
    fold, right fold, ...), every node an fp32 merge. With D = rdepth t merges on the
    longest path, c = (1 + g)^D - 1 and d = ((1 + g)(1 + k))^D - 1 (c < 1): the same bounds
    as fold_error_o with P - 1 replaced by D (a left fold has D = P - 1, a balanced tree
    D = ceil(log2 P)). *)
Theorem fold_error_tree :
  forall fe e G t,
  0 <= e <= 1 -> 0 <= G -> gamma_s e G < 1 ->
  Forall leaf_ok (rleaves t) -> rok fe e G t ->
  let r := rfl fe t in
  let all := rleaves t in
  let c := (1 + gamma_s e G) ^ rdepth t - 1 in
  let d := ((1 + gamma_s e G) * (1 + kappa_o e G)) ^ rdepth t - 1 in
  c < 1 ->
  Rabs (ss r - sig (mm r) all) <= c * sig (mm r) all /\
  Rabs (oo r - nsum (mm r) all / sig (mm r) all)
    <= (d + c) / (1 - c) * (asum (mm r) all / sig (mm r) all).
Proof.
  intros fe e G t He HG Hg1 Hl Hok r all c d Hc1.
  destruct (tree_error_gen fe e G t He HG Hg1 Hl Hok) as [_ [_ [Bs Bo]]].
  fold r all c d in Bs, Bo. split; [exact Bs|].
  assert (Hin : Forall input_ok all)
    by (apply (Forall_impl _ (fun a (H : leaf_ok a) => proj1 H) Hl)).
  assert (Hg0 := gamma_s_nonneg e G (proj1 He) HG).
  assert (Hk0 := kappa_o_nonneg e G (proj1 He) HG Hg1).
  assert (Hc0 : 0 <= c) by (unfold c; pose proof (pow_R1_Rle (1 + gamma_s e G) (rdepth t)); lra).
  assert (Hd0 : 0 <= d).
  { unfold d. pose proof (Rmult_le_pos _ _ Hg0 Hk0).
    pose proof (pow_R1_Rle ((1 + gamma_s e G) * (1 + kappa_o e G)) (rdepth t)). lra. }
  assert (PSg : 0 < sig (mm r) all).
  { unfold all in *. pose proof (rleaves_nonempty t) as Ne.
    destruct (rleaves t) as [|a rest]; [congruence|].
    inversion Hl as [|a' l' [_ Pa] Hrest]. subst. simpl.
    pose proof (exp_pos (mm a - mm r)) as Pe. pose proof (Rmult_lt_0_compat _ _ Pa Pe).
    pose proof (sig_nonneg (mm r) rest
                  (Forall_impl _ (fun a (H : leaf_ok a) => proj1 H) Hrest)). lra. }
  exact (normalize_err (oo r) (ss r) (sig (mm r) all) (nsum (mm r) all) (asum (mm r) all) c d
           PSg (conj Hc0 Hc1) Hd0 (nsum_le_asum _ _ Hin) Bs Bo).
Qed.
