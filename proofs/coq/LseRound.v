(** Rounding error of kernels/include/pagedattn/lse_state.h as the kernels build it, in
    Flocq's model of binary32: one step of PartitionState::merge ([merge_step_error]) and
    the V2 reduce, WeightedSum as kernels/src/reduce_kernel.cuh runs it
    ([weighted_sum_error], [fold_error]).

    Model (each assumption is a hypothesis of the theorems below, nothing is axiomatized):
    - binary32 = Flocq's FLT format with 24-bit precision and emin = -149 (subnormals
      included), every +, -, *, / rounded to nearest, ties to even ([rnd]); an fmaf is
      one [rnd] of the exact w * o + acc. Flocq's FLT has no largest exponent, so it equals
      IEEE binary32 only while no result overflows (|x| < 2^128): that is a stated
      assumption, not checked here.
    - No contraction: the host builds with -ffp-contract=off and nvcc with --fmad=false,
      so a * b + c in the header is rnd(rnd(a * b) + c); only lse_fma fuses.
    - max is exact (it returns one operand).
    - exp is the caller's exp_fn (expf or __expf): on the float argument d it returns some
      E with |E - exp d| <= e_exp * exp d ([exp_model]); e_exp is a parameter.
    - No underflow in the products, quotients and fma results: each of their exact results
      is 0 or at least 2^-126 in magnitude ([no_underflow]). Sums and differences of two
      floats need no such hypothesis: a tiny sum of floats is exact (Flocq's
      FLT_plus_error_N_ex). *)
From Coq Require Import Reals List Lra Lia.
Import ListNotations.
From Flocq Require Import Core Relative Plus_error.
From PagedAttn Require LseExact.
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

(** * The constants of one merge step *)

(** The factor bounding each computed weight against its exact value: the exp argument
    m - M is off by at most |m1 - m2| u (one rounding of a difference whose magnitude is at
    most the gap), exp adds e_exp, the product s * E adds u. *)
Definition alpha (e_exp gap : R) : R := exp (gap * u) * (1 + e_exp) * (1 + u) - 1.
(** Bound on s (relative) after the rounded sum w1 + w2. *)
Definition gamma_s (e_exp gap : R) : R := (1 + alpha e_exp gap) * (1 + u) - 1.
(** (1 + alpha)(1 + u)^2: a weight and two more roundings (kept for kappa_o's form). *)
Definition beta_n (e_exp gap : R) : R := (1 + alpha e_exp gap) * (1 + u) * (1 + u) - 1.
(** Bound on o, relative to the exact merge's (w1|o1| + w2|o2|)/s: each normalized weight
    rnd(w_i / s) is within (1 + alpha)(1 + u)/(1 - gamma_s) - 1 of w_ix / sx, and
    rnd(rnd(a1 o1) + rnd(a2 o2)) adds two roundings: (1 + alpha)(1 + u)^3/(1 - gamma_s) - 1. *)
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

(** * Two rounded products and their sum; a rounded quotient *)

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

(** * One merge step as PartitionState::merge computes it *)

(** The clamp of PartitionState::merge (LseExact.clamp, to [lo2 o1 o2, hi2 o1 o2]) can only
    move a value toward any point of the interval, in particular toward the exact merge,
    which is a convex combination of o1 and o2 (LseExact.convex_in). *)
Lemma clamp_closer : forall lo hi x y, lo <= y <= hi ->
  Rabs (LseExact.clamp lo hi x - y) <= Rabs (x - y).
Proof.
  intros lo hi x y [H1 H2]. unfold LseExact.clamp.
  destruct (Rlt_dec x lo).
  - rewrite (Rabs_left1 (lo - y)) by lra. rewrite (Rabs_left1 (x - y)) by lra. lra.
  - destruct (Rlt_dec hi x); [|lra].
    rewrite (Rabs_pos_eq (hi - y)) by lra. rewrite (Rabs_pos_eq (x - y)) by lra. lra.
Qed.

(** A normalized weight rnd(w / s) against wx / sx, from relative errors a on w and g on s. *)
Lemma ratio_err : forall w wx s sx a g, 0 <= wx -> 0 < sx -> 0 <= a -> 0 <= g < 1 ->
  Rabs (w - wx) <= a * wx -> Rabs (s - sx) <= g * sx -> no_underflow (w / s) ->
  Rabs (rnd (w / s) - wx / sx) <= ((1 + a) * (1 + u) / (1 - g) - 1) * (wx / sx).
Proof.
  intros w wx s sx a g Pw Ps Ha Hg Hw Hs HU.
  destruct (rnd_rel _ HU) as [d [Hd R]]. rewrite R.
  apply (division_err w wx s sx wx a g d Ps); auto.
  rewrite Rabs_pos_eq by lra. lra.
Qed.

(** merge_step_error: one fp32 step of PartitionState::merge (lse_state.h) as written, for
    two non-empty states (m1, s1, o1), (m2, s2, o2) whose m's are floats and whose s's are
    >= 0, E1, E2 the values exp_fn returned on the rounded differences:
      M = max(m1, m2) (exact), w_i = rnd(s_i E_i), s = rnd(w1 + w2),
      a_i = rnd(w_i / s), x = rnd(rnd(a1 o1) + rnd(a2 o2)) (no fma: the host builds with
      -ffp-contract=off, nvcc with --fmad=false), o = x clamped to [min, max](o1, o2).
    Against the exact merge of the same inputs, wix = s_i exp(m_i - M), sx = w1x + w2x,
    ox = (w1x o1 + w2x o2) / sx, with gap = |m1 - m2|:
      |s - sx| <= gamma_s * sx,
      |o - ox| <= kappa_o * (w1x |o1| + w2x |o2|) / sx. *)
Theorem merge_step_error :
  forall m1 s1 o1 m2 s2 o2 E1 E2 e_exp,
  fmtb m1 -> fmtb m2 -> 0 <= s1 -> 0 <= s2 -> 0 <= e_exp <= 1 ->
  exp_model e_exp E1 (rnd (m1 - Rmax m1 m2)) ->
  exp_model e_exp E2 (rnd (m2 - Rmax m1 m2)) ->
  no_underflow (s1 * E1) -> no_underflow (s2 * E2) ->
  let w1 := rnd (s1 * E1) in
  let w2 := rnd (s2 * E2) in
  let s := rnd (w1 + w2) in
  no_underflow (w1 / s) -> no_underflow (w2 / s) ->
  let a1 := rnd (w1 / s) in
  let a2 := rnd (w2 / s) in
  no_underflow (a1 * o1) -> no_underflow (a2 * o2) ->
  let x := rnd (rnd (a1 * o1) + rnd (a2 * o2)) in
  let o := LseExact.clamp (LseExact.lo2 o1 o2) (LseExact.hi2 o1 o2) x in
  let w1x := s1 * exp (m1 - Rmax m1 m2) in
  let w2x := s2 * exp (m2 - Rmax m1 m2) in
  let sx := w1x + w2x in
  let ox := (w1x * o1 + w2x * o2) / sx in
  0 < sx -> gamma_s e_exp (Rabs (m1 - m2)) < 1 ->
  Rabs (s - sx) <= gamma_s e_exp (Rabs (m1 - m2)) * sx /\
  Rabs (o - ox) <= kappa_o e_exp (Rabs (m1 - m2)) * ((w1x * Rabs o1 + w2x * Rabs o2) / sx).
Proof.
  intros m1 s1 o1 m2 s2 o2 E1 E2 e F1 F2 Hs1 Hs2 He HE1 HE2 HU1 HU2 w1 w2 s
    HQ1 HQ2 a1 a2 HV1 HV2 x o w1x w2x sx ox Psx Hg.
  assert (S : Rabs (s - sx) <= gamma_s e (Rabs (m1 - m2)) * sx)
    by (apply merge_step_error_s; assumption).
  split; [exact S|].
  pose proof (weight_err_gap s1 m1 m2 m1 E1 e F1 F2 (or_introl eq_refl) Hs1 He HE1 HU1) as W1.
  pose proof (weight_err_gap s2 m1 m2 m2 E2 e F1 F2 (or_intror eq_refl) Hs2 He HE2 HU2) as W2.
  fold w1 w2 w1x w2x in W1, W2.
  set (al := alpha e (Rabs (m1 - m2))) in *. set (g := gamma_s e (Rabs (m1 - m2))) in *.
  assert (Ha : 0 <= al) by (apply alpha_nonneg; [lra|apply Rabs_pos]).
  assert (Hg0 : 0 <= g) by (apply gamma_s_nonneg; [lra|apply Rabs_pos]).
  assert (P1 : 0 <= w1x) by (unfold w1x; pose proof (exp_pos (m1 - Rmax m1 m2)); nra).
  assert (P2 : 0 <= w2x) by (unfold w2x; pose proof (exp_pos (m2 - Rmax m1 m2)); nra).
  pose proof u_pos.
  set (ka := (1 + al) * (1 + u) / (1 - g) - 1).
  assert (Hka : 0 <= ka).
  { unfold ka. assert (1 <= (1 + al) * (1 + u)) by nra.
    assert (1 <= / (1 - g)) by (rewrite <- Rinv_1; apply Rinv_le_contravar; lra).
    unfold Rdiv. nra. }
  assert (A1 : Rabs (a1 - w1x / sx) <= ka * (w1x / sx))
    by (apply ratio_err; auto; lra).
  assert (A2 : Rabs (a2 - w2x / sx) <= ka * (w2x / sx))
    by (apply ratio_err; auto; lra).
  assert (Q1 : 0 <= w1x / sx) by (apply Rmult_le_pos; [lra|left; apply Rinv_0_lt_compat; lra]).
  assert (Q2 : 0 <= w2x / sx) by (apply Rmult_le_pos; [lra|left; apply Rinv_0_lt_compat; lra]).
  pose proof (numerator_err a1 a2 (w1x / sx) (w2x / sx) o1 o2 ka Q1 Q2 Hka A1 A2 HV1 HV2) as N.
  fold x in N.
  replace (w1x / sx * o1 + w2x / sx * o2) with ox in N by (unfold ox; field; lra).
  replace (w1x / sx * Rabs o1 + w2x / sx * Rabs o2) with ((w1x * Rabs o1 + w2x * Rabs o2) / sx)
    in N by (field; lra).
  replace ((1 + ka) * (1 + u) * (1 + u) - 1) with (kappa_o e (Rabs (m1 - m2))) in N
    by (unfold ka, kappa_o, beta_n; fold al g; field; lra).
  eapply Rle_trans; [|exact N]. apply clamp_closer. unfold ox, sx in *.
  apply LseExact.convex_in; lra.
Qed.


(** * Partition states and their exact weighted sums *)

(** A partition state (m, s, o), as the attention kernel writes it (already rounded). *)
Definition st3 : Type := (R * R * R)%type.
Definition mm (a : st3) : R := fst (fst a).
Definition ss (a : st3) : R := snd (fst a).
Definition oo (a : st3) : R := snd a.

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


(** * The V2 reduce: WeightedSum (lse_state.h), as reduce_kernel.cuh runs it *)

(** Given the reference max M (pass 1: the exact max of the partitions' m, a float), each
    partition's weight is LseState::weight_at(M) = rnd(s * exp_fn(rnd(m - M))). *)
Definition ws_weight (fe : R -> R) (M : R) (a : st3) : R := rnd (ss a * fe (rnd (mm a - M))).

(** add_weight / add_output on the running (total, acc): a weight 0 is skipped; otherwise
    total = rnd(total + w) and acc = lse_fma(w, o, acc) = rnd(w * o + acc), one rounding. *)
Definition ws_add (w o : R) (ta : R * R) : R * R :=
  if Req_EM_T w 0 then ta else (rnd (fst ta + w), rnd (w * o + snd ta)).

(** Pass 2: the partitions in order, starting from (total, acc) = (0, 0). *)
Fixpoint ws_fold (fe : R -> R) (M : R) (l : list st3) (ta : R * R) : R * R :=
  match l with
  | [] => ta
  | a :: r => ws_fold fe M r (ws_add (ws_weight fe M a) (oo a) ta)
  end.

(** WeightedSum::result, i.e. LseState::normalized: 0 when total = 0, else rnd(acc / total). *)
Definition ws_result (ta : R * R) : R :=
  if Req_EM_T (fst ta) 0 then 0 else rnd (snd ta / fst ta).

(** Hypotheses, partition by partition, on the values the fold computes: m is a float and
    s >= 0; for a non-empty state (s <> 0) m <= M <= m + G, exp_fn is within e_exp on
    rnd(m - M) and the weight's product does not underflow; for a weight that is added
    (w <> 0), the fma's exact result w * o + acc does not underflow. An empty state, s = 0,
    weighs rnd(0 * E) = 0 whatever its m (the code's -inf) and exp_fn return, and is
    skipped, so nothing is assumed about it. *)
Fixpoint ws_ok (fe : R -> R) (e G M : R) (l : list st3) (ta : R * R) : Prop :=
  match l with
  | [] => True
  | a :: r =>
      input_ok a /\
      (ss a <> 0 -> mm a <= M /\ M - mm a <= G /\
                   exp_model e (fe (rnd (mm a - M))) (rnd (mm a - M)) /\
                   no_underflow (ss a * fe (rnd (mm a - M)))) /\
      (ws_weight fe M a <> 0 -> no_underflow (ws_weight fe M a * oo a + snd ta)) /\
      ws_ok fe e G M r (ws_add (ws_weight fe M a) (oo a) ta)
  end.

(** Sums with the computed weights: sum_p w_p, sum_p w_p o_p, sum_p w_p |o_p|. *)
Fixpoint csum (f : st3 -> R) (fe : R -> R) (M : R) (l : list st3) : R :=
  match l with [] => 0 | a :: r => ws_weight fe M a * f a + csum f fe M r end.
Definition cw := csum (fun _ => 1).
Definition cn := csum oo.
Definition ca := csum (fun a => Rabs (oo a)).

Lemma pow1u_ge1 : forall n, 1 <= (1 + u) ^ n.
Proof. intros n. pose proof u_pos. apply pow_R1_Rle. lra. Qed.

Lemma pow1u_mono : forall n k, (n <= k)%nat -> (1 + u) ^ n <= (1 + u) ^ k.
Proof. intros n k H. pose proof u_pos. apply Rle_pow; [lra|exact H]. Qed.

(** One rounded addition of a weight w >= 0 to a total T within c of S >= 0. *)
Lemma sum_step : forall T S w c d, 0 <= S -> 0 <= w -> 0 <= c -> Rabs d <= u ->
  Rabs (T - S) <= c * S ->
  Rabs ((T + w) * (1 + d) - (S + w)) <= ((1 + c) * (1 + u) - 1) * (S + w).
Proof.
  intros T S w c d HS Hw Hc Hd H. pose proof u_pos.
  replace ((T + w) * (1 + d) - (S + w)) with ((T - S) + (T + w) * d) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult.
  assert (HT : Rabs (T + w) <= (1 + c) * S + w).
  { replace (T + w) with ((T - S) + (S + w)) by ring.
    eapply Rle_trans; [apply Rabs_triang|]. rewrite (Rabs_pos_eq (S + w)) by lra. lra. }
  assert (Rabs (T + w) * Rabs d <= ((1 + c) * S + w) * u)
    by (apply Rmult_le_compat; auto using Rabs_pos).
  assert (0 <= c * u * S) by (apply Rmult_le_pos; [apply Rmult_le_pos|]; lra).
  assert (0 <= c * w * (1 + u)) by (apply Rmult_le_pos; [apply Rmult_le_pos|]; lra).
  nra.
Qed.

(** One fma acc' = rnd(w * o + acc), acc within c (against B >= |N|) of N. *)
Lemma fma_step : forall A N B w o c d, 0 <= B -> 0 <= w -> 0 <= c -> Rabs d <= u ->
  Rabs N <= B -> Rabs (A - N) <= c * B ->
  Rabs ((w * o + A) * (1 + d) - (N + w * o)) <= ((1 + c) * (1 + u) - 1) * (B + w * Rabs o).
Proof.
  intros A N B w o c d HB Hw Hc Hd HN H. pose proof u_pos. pose proof (Rabs_pos o).
  replace ((w * o + A) * (1 + d) - (N + w * o)) with ((A - N) + (w * o + A) * d) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult.
  assert (HA : Rabs (w * o + A) <= w * Rabs o + (1 + c) * B).
  { replace (w * o + A) with (w * o + ((A - N) + N)) by ring.
    eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult, (Rabs_pos_eq w) by lra.
    pose proof (Rabs_triang (A - N) N). lra. }
  assert (Rabs (w * o + A) * Rabs d <= (w * Rabs o + (1 + c) * B) * u)
    by (apply Rmult_le_compat; auto using Rabs_pos).
  assert (0 <= c * u * B) by (apply Rmult_le_pos; [apply Rmult_le_pos|]; lra).
  assert (0 <= c * (w * Rabs o) * (1 + u)) by (apply Rmult_le_pos; [apply Rmult_le_pos; [|apply Rmult_le_pos]|]; lra).
  nra.
Qed.

Lemma ws_weight_nonneg : forall fe e G M a, e <= 1 -> 0 <= ss a ->
  (ss a <> 0 -> mm a <= M /\ M - mm a <= G /\
               exp_model e (fe (rnd (mm a - M))) (rnd (mm a - M)) /\
               no_underflow (ss a * fe (rnd (mm a - M)))) ->
  0 <= ws_weight fe M a.
Proof.
  intros fe e G M a He Hs H. unfold ws_weight. apply rnd_nonneg.
  destruct (Req_dec (ss a) 0) as [Z|NZ]; [rewrite Z; lra|].
  destruct (H NZ) as [_ [_ [HE _]]].
  pose proof (exp_model_nonneg _ _ _ He HE). nra.
Qed.

Lemma rnd_generic : forall x, fmtb x -> rnd x = x.
Proof. intros x F. unfold rnd. apply round_generic; auto with typeclass_instances. Qed.

(** The summation, against the computed weights, from any (total, acc) = (T, A) that is
    within its bound of (S, N): each nonzero weight adds one rounding to each sum. The
    total's invariant has a second case, "nothing added yet" (T = S = 0), whose first
    addition rnd(0 + w) = w is exact. *)
Lemma ws_sum_gen : forall fe e G M l T A S N B kT kA,
  0 <= e <= 1 -> fmtb T -> 0 <= S -> 0 <= B -> Rabs N <= B ->
  ((T = 0 /\ S = 0) \/ Rabs (T - S) <= ((1 + u) ^ kT - 1) * S) ->
  Rabs (A - N) <= ((1 + u) ^ kA - 1) * B ->
  ws_ok fe e G M l (T, A) ->
  let r := ws_fold fe M l (T, A) in
  let S' := S + cw fe M l in let N' := N + cn fe M l in let B' := B + ca fe M l in
  ((fst r = 0 /\ S' = 0) \/ Rabs (fst r - S') <= ((1 + u) ^ (kT + length l) - 1) * S') /\
  Rabs (snd r - N') <= ((1 + u) ^ (kA + length l) - 1) * B'.
Proof.
  intros fe e G M l. induction l as [|a l IH];
    intros T A S N B kT kA He FT HS HB HN HT HA Hok r S' N' B'.
  - unfold r, S', N', B', cw, cn, ca. simpl. rewrite !Rplus_0_r, !Nat.add_0_r. auto.
  - destruct Hok as [[Fm Hs] [Hne [HU2 Hok]]].
    assert (Pw : 0 <= ws_weight fe M a) by (apply (ws_weight_nonneg fe e G); auto; lra).
    set (w := ws_weight fe M a) in *.
    pose proof u_pos. pose proof (Rabs_pos (oo a)).
    assert (Ew : ws_fold fe M (a :: l) (T, A) = ws_fold fe M l (ws_add w (oo a) (T, A)))
      by reflexivity.
    assert (ES : S' = (S + w) + cw fe M l) by (unfold S', cw; simpl; fold w; ring).
    assert (EN : N' = (N + w * oo a) + cn fe M l) by (unfold N', cn; simpl; fold w; ring).
    assert (EB : B' = (B + w * Rabs (oo a)) + ca fe M l) by (unfold B', ca; simpl; fold w; ring).
    replace (kT + length (a :: l))%nat with (Nat.succ kT + length l)%nat by (simpl; lia).
    replace (kA + length (a :: l))%nat with (Nat.succ kA + length l)%nat by (simpl; lia).
    unfold r. rewrite Ew, ES, EN, EB.
    unfold ws_add in Hok |- *. destruct (Req_EM_T w 0) as [Z|NZ].
    + (* skipped: nothing changes; the bounds only grow *)
      rewrite Z, !Rmult_0_l, !Rplus_0_r.
      apply (IH T A S N B (Nat.succ kT) (Nat.succ kA) He FT HS HB HN); auto.
      * destruct HT as [HT|HT]; [left; exact HT|right].
        eapply Rle_trans; [exact HT|]. apply Rmult_le_compat_r; [lra|].
        pose proof (pow1u_mono kT (Nat.succ kT) (Nat.le_succ_diag_r kT)). lra.
      * eapply Rle_trans; [exact HA|]. apply Rmult_le_compat_r; [lra|].
        pose proof (pow1u_mono kA (Nat.succ kA) (Nat.le_succ_diag_r kA)). lra.
    + simpl fst in *. simpl snd in *.
      assert (Fw : fmtb w) by apply fmtb_rnd.
      apply IH with (kT := Nat.succ kT) (kA := Nat.succ kA); auto.
      * apply fmtb_rnd.
      * lra.
      * assert (0 <= w * Rabs (oo a)) by nra. lra.
      * eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult, (Rabs_pos_eq w) by lra. lra.
      * right. destruct HT as [[-> ->]|HT].
        -- rewrite Rplus_0_l, (rnd_generic w Fw).
           replace (w - w) with 0 by ring. rewrite Rabs_R0.
           apply Rmult_le_pos; [pose proof (pow1u_ge1 (Nat.succ kT)); lra|lra].
        -- destruct (rnd_plus T w FT Fw) as [d [Hd R]]. rewrite R.
           replace ((1 + u) ^ Nat.succ kT - 1) with ((1 + ((1 + u) ^ kT - 1)) * (1 + u) - 1)
             by (simpl; ring).
           apply sum_step; auto. pose proof (pow1u_ge1 kT). lra.
      * destruct (rnd_rel _ (HU2 NZ)) as [d [Hd R]]. rewrite R.
        replace ((1 + u) ^ Nat.succ kA - 1) with ((1 + ((1 + u) ^ kA - 1)) * (1 + u) - 1)
          by (simpl; ring).
        apply fma_step; auto. pose proof (pow1u_ge1 kA). lra.
Qed.

Lemma ws_ok_inputs : forall fe e G M l ta, ws_ok fe e G M l ta -> Forall input_ok l.
Proof.
  intros fe e G M l. induction l as [|a l IH]; intros ta H; [constructor|].
  destruct H as [Ha [_ [_ H]]]. constructor; [exact Ha|exact (IH _ H)].
Qed.

(** The reduce's two sums against the same sums with the computed weights w_p. Over P
    partitions, total has at most P - 1 roundings (the first nonzero weight is added to 0
    exactly) and each fma chain P. *)
Lemma ws_sums_err : forall fe e G M l,
  0 <= e <= 1 -> ws_ok fe e G M l (0, 0) ->
  let r := ws_fold fe M l (0, 0) in
  Rabs (fst r - cw fe M l) <= ((1 + u) ^ (length l - 1) - 1) * cw fe M l /\
  Rabs (snd r - cn fe M l) <= ((1 + u) ^ length l - 1) * ca fe M l.
Proof.
  intros fe e G M l He Hok r. pose proof u_pos.
  assert (CW : forall l ta, ws_ok fe e G M l ta -> 0 <= cw fe M l /\ 0 <= ca fe M l).
  { clear - He. induction l as [|a l IH]; intros ta H; [unfold cw, ca; simpl; lra|].
    destruct H as [[_ Hs] [Hne [_ H]]].
    assert (0 <= ws_weight fe M a) by (apply (ws_weight_nonneg fe e G); auto; lra).
    destruct (IH _ H) as [H1 H2]. unfold cw, ca in *. simpl.
    pose proof (Rabs_pos (oo a)). split; nra. }
  destruct l as [|a l].
  - unfold r, cw, cn, ca. simpl. rewrite Rminus_0_r, !Rabs_R0, !Rmult_0_r. lra.
  - replace (length (a :: l) - 1)%nat with (0 + length l)%nat by (simpl; lia).
    replace (length (a :: l)) with (1 + length l)%nat by reflexivity.
    destruct Hok as [[Fm Hs] [Hne [HU2 Hok]]].
    assert (Pw : 0 <= ws_weight fe M a) by (apply (ws_weight_nonneg fe e G); auto; lra).
    set (w := ws_weight fe M a) in *.
    pose proof (Rabs_pos (oo a)).
    assert (ES : cw fe M (a :: l) = (0 + w) + cw fe M l) by (unfold cw; simpl; fold w; ring).
    assert (EN : cn fe M (a :: l) = (0 + w * oo a) + cn fe M l) by (unfold cn; simpl; fold w; ring).
    assert (EB : ca fe M (a :: l) = (0 + w * Rabs (oo a)) + ca fe M l) by (unfold ca; simpl; fold w; ring).
    unfold r. simpl ws_fold. fold w. rewrite ES, EN, EB.
    unfold ws_add in Hok |- *. destruct (Req_EM_T w 0) as [Z|NZ].
    + rewrite Z, !Rmult_0_l, !Rplus_0_r in *.
      destruct (ws_sum_gen fe e G M l 0 0 0 0 0 0 1 He (generic_format_0 _ _)
                  (Rle_refl 0) (Rle_refl 0) (Req_le _ _ Rabs_R0) (or_introl (conj eq_refl eq_refl))
                  ltac:(rewrite Rminus_0_r, Rabs_R0; lra) Hok) as [H1 H2].
      split; [|exact H2].
      destruct (CW l _ Hok) as [C1 _].
      destruct H1 as [[-> E]|H1]; [|exact H1].
      rewrite E, Rminus_0_r, Rabs_R0. lra.
    + simpl fst in *. simpl snd in *.
      assert (Fw : fmtb w) by apply fmtb_rnd.
      assert (E0 : rnd (0 + w) = w) by (rewrite Rplus_0_l; apply rnd_generic, Fw).
      specialize (HU2 NZ).
      rewrite E0 in Hok |- *. rewrite Rplus_0_r in HU2, Hok |- *.
      destruct (rnd_rel _ HU2) as [d [Hd R]].
      assert (A1 : Rabs (rnd (w * oo a) - (0 + w * oo a)) <= ((1 + u) ^ 1 - 1) * (0 + w * Rabs (oo a))).
      { rewrite R. replace ((1 + u) ^ 1 - 1) with ((1 + 0) * (1 + u) - 1) by ring.
        replace (w * oo a * (1 + d)) with ((w * oo a + 0) * (1 + d)) by ring.
        apply fma_step; try lra. rewrite Rabs_R0; lra. rewrite Rminus_0_r, Rabs_R0; lra. }
      destruct (ws_sum_gen fe e G M l w (rnd (w * oo a)) (0 + w) (0 + w * oo a) (0 + w * Rabs (oo a))
                  0 1 He Fw ltac:(lra) ltac:(nra)
                  ltac:(rewrite Rplus_0_l, Rabs_mult, (Rabs_pos_eq w) by lra; lra)
                  ltac:(right; replace (w - (0 + w)) with 0 by ring; rewrite Rabs_R0; simpl; lra)
                  A1 Hok) as [H1 H2].
      split; [|exact H2].
      destruct (CW l _ Hok) as [C1 _].
      destruct H1 as [[-> E]|H1]; [|exact H1].
      rewrite E, Rminus_0_r, Rabs_R0. lra.
Qed.

Lemma ws_computed_sums : forall fe e G M l ta, 0 <= e <= 1 -> ws_ok fe e G M l ta ->
  0 <= cw fe M l /\ Rabs (cn fe M l) <= ca fe M l.
Proof.
  intros fe e G M l ta He. revert ta.
  induction l as [|a l IH]; intros ta H.
  - unfold cw, cn, ca. simpl. rewrite Rabs_R0. lra.
  - destruct H as [[_ Hs] [Hne [_ H]]].
    assert (Pw : 0 <= ws_weight fe M a) by (apply (ws_weight_nonneg fe e G); auto; lra).
    destruct (IH _ H) as [H1 H2]. unfold cw, cn, ca in *. simpl. split; [nra|].
    eapply Rle_trans; [apply Rabs_triang|].
    rewrite Rabs_mult, (Rabs_pos_eq (ws_weight fe M a)) by lra. lra.
Qed.

(** weighted_sum_error: the reduce (WeightedSum) against the exact weighted sum with the
    weights it computed, w_p = rnd(s_p exp_fn(rnd(m_p - M))): over P partitions,
      |total - sum_p w_p|        <= ((1 + u)^(P-1) - 1) * sum_p w_p,
      |acc - sum_p w_p o_p|      <= ((1 + u)^P - 1) * sum_p w_p |o_p|,
    and the result acc / total, rounded, against sum_p w_p o_p / sum_p w_p, relative to
    sum_p w_p |o_p| / sum_p w_p, within (1 + u)^(P+1) / (2 - (1 + u)^(P-1)) - 1
    (about 2 P u). These are the reduce's summation constants of proofs/error_bound.md. *)
Theorem weighted_sum_error : forall fe e G M l,
  0 <= e <= 1 -> ws_ok fe e G M l (0, 0) ->
  let r := ws_fold fe M l (0, 0) in
  let g := (1 + u) ^ (length l - 1) - 1 in
  let b := (1 + u) ^ length l - 1 in
  Rabs (fst r - cw fe M l) <= g * cw fe M l /\
  Rabs (snd r - cn fe M l) <= b * ca fe M l /\
  (0 < cw fe M l -> g < 1 -> no_underflow (snd r / fst r) ->
   Rabs (ws_result r - cn fe M l / cw fe M l)
   <= ((1 + b) * (1 + u) / (1 - g) - 1) * (ca fe M l / cw fe M l)).
Proof.
  intros fe e G M l He Hok r g b.
  destruct (ws_sums_err fe e G M l He Hok) as [T1 A1]. fold r g b in T1, A1.
  destruct (ws_computed_sums fe e G M l _ He Hok) as [Pcw Nle].
  pose proof u_pos.
  pose proof (pow1u_ge1 (length l - 1)). pose proof (pow1u_ge1 (length l)).
  split; [exact T1|]. split; [exact A1|].
  intros Ps Hg HU.
  assert (Hg0 : 0 <= g) by (unfold g; lra).
  assert (Hb0 : 0 <= b) by (unfold b; lra).
  assert (Pt : 0 < fst r) by (apply Rabs_le_inv in T1; nra).
  unfold ws_result. destruct (Req_EM_T (fst r) 0) as [Z|_]; [lra|].
  destruct (rnd_rel _ HU) as [d [Hd R]]. rewrite R.
  apply division_err; auto.
Qed.

(** The computed weights against the exact ones, w*_p = s_p exp(m_p - M): each within
    alpha e_exp G relatively (weight_err, with M - m_p <= G). *)
Lemma ws_weights_err : forall fe e G M l ta, 0 <= e <= 1 -> 0 <= G -> fmtb M ->
  ws_ok fe e G M l ta ->
  Rabs (cw fe M l - sig M l) <= alpha e G * sig M l /\
  Rabs (cn fe M l - nsum M l) <= alpha e G * asum M l /\
  ca fe M l <= (1 + alpha e G) * asum M l.
Proof.
  intros fe e G M l ta He HG FM. revert ta.
  induction l as [|a l IH]; intros ta Hok.
  - unfold cw, cn, ca, nsum, asum. simpl. rewrite Rminus_0_r, Rabs_R0. lra.
  - destruct Hok as [[Fm Hs] [Hne [HU2 Hok]]].
    destruct (IH _ Hok) as [I1 [I2 I3]].
    set (w := ws_weight fe M a).
    set (wx := ss a * exp (mm a - M)).
    assert (Hal : 0 <= alpha e G) by (apply alpha_nonneg; lra).
    assert (W' : Rabs (w - wx) <= alpha e G * wx).
    { destruct (Req_dec (ss a) 0) as [Z|NZ].
      { unfold w, wx, ws_weight. rewrite Z, !Rmult_0_l, Rminus_0_r.
        unfold rnd. rewrite round_0 by auto with typeclass_instances. rewrite Rabs_R0. lra. }
      destruct (Hne NZ) as [HmM [HGa [HE HU1]]].
      pose proof (weight_err (ss a) (mm a) M _ e Fm FM HmM Hs He HE HU1) as W.
      fold w wx in W.
      eapply Rle_trans; [exact W|]. apply Rmult_le_compat_r; [unfold wx; pose proof (exp_pos (mm a - M)); nra|].
      unfold alpha. pose proof u_pos.
      assert (exp ((M - mm a) * u) <= exp (G * u)) by (apply exp_mono, Rmult_le_compat_r; lra).
      apply Rplus_le_compat_r. apply Rmult_le_compat_r; [lra|]. apply Rmult_le_compat_r; lra. }
    pose proof (Rabs_pos (oo a)).
    assert (Pwx : 0 <= wx) by (unfold wx; pose proof (exp_pos (mm a - M)); nra).
    unfold cw, cn, ca, nsum, asum in *. simpl. fold w wx.
    fold (csum (fun _ => 1) fe M l) (csum oo fe M l) (csum (fun a => Rabs (oo a)) fe M l).
    fold (wsum oo M l) (wsum (fun a => Rabs (oo a)) M l).
    repeat split.
    + replace (w * 1 + csum (fun _ => 1) fe M l - (wx + sig M l))
        with ((w - wx) + (csum (fun _ => 1) fe M l - sig M l)) by ring.
      eapply Rle_trans; [apply Rabs_triang|]. lra.
    + replace (w * oo a + csum oo fe M l - (wx * oo a + wsum oo M l))
        with ((w - wx) * oo a + (csum oo fe M l - wsum oo M l)) by ring.
      eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult.
      assert (Rabs (w - wx) * Rabs (oo a) <= alpha e G * wx * Rabs (oo a))
        by (apply Rmult_le_compat_r; lra).
      lra.
    + assert (w <= (1 + alpha e G) * wx) by (apply Rabs_le_inv in W'; lra).
      assert (w * Rabs (oo a) <= (1 + alpha e G) * wx * Rabs (oo a))
        by (apply Rmult_le_compat_r; lra).
      lra.
Qed.

(** fold_error (the shared id; it names the reduce's error, which is no longer a fold of
    merges): the V2 reduce of P partition states (m_p, s_p, o_p), with the reference max M a
    float, M - m_p <= G, against the exact weighted sum of the same (already rounded)
    states at M: sig = sum_p s_p e^(m_p - M), nsum = sum_p s_p e^(m_p - M) o_p,
    asum = sum_p s_p e^(m_p - M) |o_p|. With alpha = alpha e_exp G (one weight),
      g = (1 + alpha)(1 + u)^(P-1) - 1   (total),
      b = (1 + alpha)(1 + u)^P - 1       (acc, against asum),
    the result acc / total is within (1 + b)(1 + u) / (1 - g) - 1 of nsum / sig, relative
    to asum / sig. *)
Theorem fold_error : forall fe e G M l,
  0 <= e <= 1 -> 0 <= G -> fmtb M -> ws_ok fe e G M l (0, 0) ->
  let P := length l in
  let r := ws_fold fe M l (0, 0) in
  let g := (1 + alpha e G) * (1 + u) ^ (P - 1) - 1 in
  let b := (1 + alpha e G) * (1 + u) ^ P - 1 in
  Rabs (fst r - sig M l) <= g * sig M l /\
  Rabs (snd r - nsum M l) <= b * asum M l /\
  (0 < sig M l -> g < 1 -> no_underflow (snd r / fst r) ->
   Rabs (ws_result r - nsum M l / sig M l)
   <= ((1 + b) * (1 + u) / (1 - g) - 1) * (asum M l / sig M l)).
Proof.
  intros fe e G M l He HG FM Hok P r g b.
  destruct (ws_sums_err fe e G M l He Hok) as [T1 A1]. fold r P in T1, A1.
  destruct (ws_weights_err fe e G M l _ He HG FM Hok) as [W1 [W2 W3]].
  pose proof (ws_ok_inputs _ _ _ _ _ _ Hok) as Fin.
  pose proof (sig_nonneg M l Fin) as Psig. pose proof (asum_nonneg M l Fin) as Pasum.
  pose proof (nsum_le_asum M l Fin) as Nle.
  assert (Hal : 0 <= alpha e G) by (apply alpha_nonneg; lra).
  pose proof u_pos. pose proof (pow1u_ge1 (P - 1)) as Q1. pose proof (pow1u_ge1 P) as Q2.
  assert (Tot : Rabs (fst r - sig M l) <= g * sig M l).
  { replace (fst r - sig M l) with ((fst r - cw fe M l) + (cw fe M l - sig M l)) by ring.
    eapply Rle_trans; [apply Rabs_triang|].
    assert (cw fe M l <= (1 + alpha e G) * sig M l) by (apply Rabs_le_inv in W1; lra).
    assert (((1 + u) ^ (P - 1) - 1) * cw fe M l
            <= ((1 + u) ^ (P - 1) - 1) * ((1 + alpha e G) * sig M l))
      by (apply Rmult_le_compat_l; lra).
    unfold g. nra. }
  assert (Acc : Rabs (snd r - nsum M l) <= b * asum M l).
  { replace (snd r - nsum M l) with ((snd r - cn fe M l) + (cn fe M l - nsum M l)) by ring.
    eapply Rle_trans; [apply Rabs_triang|].
    assert (((1 + u) ^ P - 1) * ca fe M l <= ((1 + u) ^ P - 1) * ((1 + alpha e G) * asum M l))
      by (apply Rmult_le_compat_l; lra).
    unfold b. nra. }
  split; [exact Tot|]. split; [exact Acc|].
  intros Ps Hg HU.
  assert (Hg0 : 0 <= g) by (unfold g; nra).
  assert (Hb0 : 0 <= b) by (unfold b; nra).
  assert (Pt : 0 < fst r) by (apply Rabs_le_inv in Tot; nra).
  unfold ws_result. destruct (Req_EM_T (fst r) 0) as [Z|_]; [lra|].
  destruct (rnd_rel _ HU) as [d [Hd R]]. rewrite R.
  apply division_err; auto.
Qed.

