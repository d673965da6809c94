(** Rounding error of kernels/include/pagedattn/lse_state.h as the kernels build it, in
    Flocq's model of binary32 with its underflow term (Fp.v): one step of
    PartitionState::merge ([merge_step_error]) and the V2 reduce, WeightedSum as
    kernels/src/reduce_kernel.cuh runs it ([weighted_sum_error], [fold_error]).

    Model (each assumption is a hypothesis of the theorems below, nothing is axiomatized):
    - binary32 = Flocq's FLT format with 24-bit precision and emin = -149 (subnormals
      included), every +, -, *, / rounded to nearest, ties to even ([Fp.rnd]); an fmaf is
      one [rnd] of the exact w * o + acc. Every rounding is x (1 + d) + e with |d| <= u and
      |e| <= 2^-150 ([Fp.rnd_err]): no result is assumed normal. Sums and differences of
      two floats have no absolute term (a tiny sum of floats is exact). Flocq's FLT has no
      largest exponent, so it equals IEEE binary32 only while no result overflows (the
      reduce's rescue path for that is in Kernel.v).
    - No contraction: the host builds with -ffp-contract=off and nvcc with --fmad=false,
      so a * b + c in the header is rnd(rnd(a * b) + c); only lse_fma fuses.
    - max is exact (it returns one operand).
    - exp is the caller's exp_fn (expf or __expf): on the float argument d it returns some
      E >= 0 with |E - exp d| <= e_exp * exp d + ee ([exp_model]); e_exp and ee are
      parameters. ee covers results flushed to zero (__expf is ex2.approx.ftz: below
      2^-126 it may return 0), so partitions far below the global max are covered. *)
From Coq Require Import Reals List Lra Lia.
Import ListNotations.
From Flocq Require Import Core.
From PagedAttn Require Import Fp Sums Err.
From PagedAttn Require LseExact.
Open Scope R_scope.

Definition exp_model (e_exp ee E d : R) : Prop :=
  0 <= E /\ Rabs (E - exp d) <= e_exp * exp d + ee.

Lemma fmtb_max : forall a b, fmtb a -> fmtb b -> fmtb (Rmax a b).
Proof. intros a b Fa Fb. unfold Rmax. destruct (Rle_dec a b); assumption. Qed.

(** * One weight: w = rnd(s * E), E = exp_fn(rnd(m - M)), against s * exp(m - M). *)

(** The relative factor of one weight: exp of an argument off by t (|t| <= a), the exp's
    relative error eps (|eps| <= e) and the product's d1 (|d1| <= u). *)
Lemma weight_factor : forall a e t eps d1, 0 <= a -> 0 <= e <= 1 ->
  Rabs t <= a -> Rabs eps <= e -> Rabs d1 <= u ->
  Rabs (exp t * (1 + eps) * (1 + d1) - 1) <= exp a * (1 + e) * (1 + u) - 1.
Proof.
  intros a e t eps d1 Ha He Ht Heps Hd1.
  set (X := exp t). set (A := exp a).
  assert (XA : X <= A) by (apply exp_mono; apply Rabs_le_inv in Ht; lra).
  assert (AX : 1 - a <= X).
  { pose proof (exp_ineq1_le t). apply Rabs_le_inv in Ht. unfold X. lra. }
  assert (A1 : 1 + a <= A) by apply exp_ineq1_le.
  apply Rabs_le_inv in Heps. apply Rabs_le_inv in Hd1. pose proof u_pos. pose proof u_small.
  assert (P0 : 0 <= X) by (unfold X; pose proof (exp_pos t); lra).
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

(** One weight w = rnd(s E), E = exp_fn(rnd(m - M)), against s exp(m - M): relative
    exp((M - m) u)(1 + e)(1 + u) - 1, plus the absolute (1 + u) s ee + 2^-150 of an exp
    flushed to zero and a product below the normal range. *)
Lemma weight_err : forall s m M E e ee,
  fmtb m -> fmtb M -> m <= M -> 0 <= s -> 0 <= e <= 1 -> 0 <= ee ->
  exp_model e ee E (rnd (m - M)) ->
  Rabs (rnd (s * E) - s * exp (m - M))
  <= (exp ((M - m) * u) * (1 + e) * (1 + u) - 1) * (s * exp (m - M))
     + ((1 + u) * s * ee + eta).
Proof.
  intros s m M E e ee Fm FM HmM Hs He Hee [HE0 HE].
  destruct (rnd_minus m M Fm FM) as [d0 [Hd0 R0]].
  set (x := m - M) in *. set (a := (M - m) * u). set (t := x * d0).
  assert (Ha : 0 <= a) by (unfold a; apply Rmult_le_pos; [lra|apply u_pos]).
  assert (Ht : Rabs t <= a).
  { unfold t, a. rewrite Rabs_mult. replace (M - m) with (Rabs x)
      by (unfold x; rewrite Rabs_left1 by lra; ring).
    apply Rmult_le_compat_l; [apply Rabs_pos|exact Hd0]. }
  assert (Ed : exp (rnd x) = exp x * exp t).
  { rewrite R0, <- exp_plus. f_equal. unfold t. ring. }
  pose proof (exp_pos x) as Px. pose proof (exp_pos t) as Pt.
  destruct (split_err E (exp (rnd x)) e ee (exp_pos _) (proj1 He) Hee HE)
    as [eps [z [Heps [Hz EE]]]].
  destruct (rnd_err (s * E)) as [d1 [e1 [Hd1 [He1 [_ R1]]]]]. rewrite R1, EE, Ed.
  pose proof (weight_factor a e t eps d1 Ha He Ht Heps Hd1) as WF.
  pose proof u_pos. pose proof eta_pos.
  replace (s * (exp x * exp t * (1 + eps) + z) * (1 + d1) + e1 - s * exp x)
    with ((exp t * (1 + eps) * (1 + d1) - 1) * (s * exp x) + s * z * (1 + d1) + e1) by ring.
  assert (B1 : Rabs ((exp t * (1 + eps) * (1 + d1) - 1) * (s * exp x))
               <= (exp a * (1 + e) * (1 + u) - 1) * (s * exp x)).
  { rewrite Rabs_mult, (Rabs_pos_eq (s * exp x)) by nra.
    apply Rmult_le_compat_r; [nra|exact WF]. }
  assert (B2 : Rabs (s * z * (1 + d1)) <= (1 + u) * s * ee).
  { rewrite !Rabs_mult, (Rabs_pos_eq s) by lra.
    assert (Rabs (1 + d1) <= 1 + u) by (apply Rabs_le; apply Rabs_le_inv in Hd1; lra).
    assert (Rabs z * Rabs (1 + d1) <= ee * (1 + u))
      by (apply Rmult_le_compat; auto using Rabs_pos).
    assert (s * (Rabs z * Rabs (1 + d1)) <= s * (ee * (1 + u))) by (apply Rmult_le_compat_l; lra).
    lra. }
  pose proof (Rabs_triang ((exp t * (1 + eps) * (1 + d1) - 1) * (s * exp x) + s * z * (1 + d1)) e1).
  pose proof (Rabs_triang ((exp t * (1 + eps) * (1 + d1) - 1) * (s * exp x)) (s * z * (1 + d1))).
  lra.
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

Lemma weight_err_gap : forall s m1 m2 m E e ee,
  fmtb m1 -> fmtb m2 -> (m = m1 \/ m = m2) -> 0 <= s -> 0 <= e <= 1 -> 0 <= ee ->
  exp_model e ee E (rnd (m - Rmax m1 m2)) ->
  Rabs (rnd (s * E) - s * exp (m - Rmax m1 m2))
  <= alpha e (Rabs (m1 - m2)) * (s * exp (m - Rmax m1 m2)) + ((1 + u) * s * ee + eta).
Proof.
  intros s m1 m2 m E e ee F1 F2 Hm Hs He Hee HE.
  assert (Fm : fmtb m) by (destruct Hm as [->| ->]; auto).
  assert (Le : m <= Rmax m1 m2) by (destruct Hm as [->| ->]; [apply Rmax_l|apply Rmax_r]).
  assert (Gap : Rmax m1 m2 - m <= Rabs (m1 - m2)).
  { unfold Rmax. destruct (Rle_dec m1 m2), Hm as [->| ->];
      unfold Rabs; destruct (Rcase_abs _); lra. }
  eapply Rle_trans;
    [apply (weight_err s m (Rmax m1 m2) E e ee Fm (fmtb_max _ _ F1 F2) Le Hs He Hee HE)|].
  apply Rplus_le_compat_r.
  apply Rmult_le_compat_r; [pose proof (exp_pos (m - Rmax m1 m2)); nra|].
  unfold alpha. pose proof u_pos.
  assert (exp ((Rmax m1 m2 - m) * u) <= exp (Rabs (m1 - m2) * u))
    by (apply exp_mono, Rmult_le_compat_r; auto).
  assert (0 < 1 + e) by lra. assert (0 < 1 + u) by lra.
  apply Rplus_le_compat_r. apply Rmult_le_compat_r; [lra|]. apply Rmult_le_compat_r; lra.
Qed.

(** merge_step_error, the (m, s) part: M is exact, and the computed s is within gamma_s of
    the exact merge w1* + w2* of the same (already rounded) inputs, plus the two weights'
    absolute terms om_i = (1 + u) s_i ee + 2^-150 after one more rounding. *)
Theorem merge_step_error_s :
  forall m1 s1 m2 s2 E1 E2 e ee,
  fmtb m1 -> fmtb m2 -> 0 <= s1 -> 0 <= s2 -> 0 <= e <= 1 -> 0 <= ee ->
  exp_model e ee E1 (rnd (m1 - Rmax m1 m2)) ->
  exp_model e ee E2 (rnd (m2 - Rmax m1 m2)) ->
  let s := rnd (rnd (s1 * E1) + rnd (s2 * E2)) in
  let sx := s1 * exp (m1 - Rmax m1 m2) + s2 * exp (m2 - Rmax m1 m2) in
  let om1 := (1 + u) * s1 * ee + eta in
  let om2 := (1 + u) * s2 * ee + eta in
  Rabs (s - sx) <= gamma_s e (Rabs (m1 - m2)) * sx + (1 + u) * (om1 + om2).
Proof.
  intros m1 s1 m2 s2 E1 E2 e ee F1 F2 Hs1 Hs2 He Hee HE1 HE2 s sx om1 om2.
  pose proof (weight_err_gap s1 m1 m2 m1 E1 e ee F1 F2 (or_introl eq_refl) Hs1 He Hee HE1) as W1.
  pose proof (weight_err_gap s2 m1 m2 m2 E2 e ee F1 F2 (or_intror eq_refl) Hs2 He Hee HE2) as W2.
  set (a := alpha e (Rabs (m1 - m2))) in *.
  assert (Ha : 0 <= a) by (apply alpha_nonneg; [lra|apply Rabs_pos]).
  assert (W : Rabs ((rnd (s1 * E1) + rnd (s2 * E2)) - sx) <= a * sx + (om1 + om2)).
  { unfold sx. replace (a * (s1 * exp (m1 - Rmax m1 m2) + s2 * exp (m2 - Rmax m1 m2)) + (om1 + om2))
      with ((a * (s1 * exp (m1 - Rmax m1 m2)) + om1) + (a * (s2 * exp (m2 - Rmax m1 m2)) + om2))
      by ring.
    apply abs_sum_le; assumption. }
  destruct (rnd_plus _ _ (fmtb_rnd (s1 * E1)) (fmtb_rnd (s2 * E2))) as [d [Hd R]].
  unfold s. rewrite R. unfold gamma_s. fold a.
  assert (Hsx : 0 <= sx).
  { unfold sx. pose proof (exp_pos (m1 - Rmax m1 m2)). pose proof (exp_pos (m2 - Rmax m1 m2)). nra. }
  set (w := rnd (s1 * E1) + rnd (s2 * E2)) in *. pose proof u_pos.
  replace (w * (1 + d) - sx) with ((w - sx) * (1 + d) + d * sx) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult, (Rabs_pos_eq sx) by lra.
  assert (Rabs (1 + d) <= 1 + u) by (apply Rabs_le; apply Rabs_le_inv in Hd; lra).
  assert (Rabs (w - sx) * Rabs (1 + d) <= (a * sx + (om1 + om2)) * (1 + u))
    by (apply Rmult_le_compat; auto using Rabs_pos).
  assert (Rabs d * sx <= u * sx) by (apply Rmult_le_compat_r; lra).
  nra.
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

(** One product rnd(a o) with a within ka q + c of q >= 0, then a second rounding d3. *)
Lemma prod2_err : forall a q o ka c d3, 0 <= q -> 0 <= ka -> 0 <= c -> Rabs d3 <= u ->
  Rabs (a - q) <= ka * q + c ->
  Rabs (rnd (a * o) * (1 + d3) - q * o)
  <= ((1 + ka) * (1 + u) * (1 + u) - 1) * (q * Rabs o) + (1 + u) * (1 + u) * (c * Rabs o)
     + (1 + u) * eta.
Proof.
  intros a q o ka c d3 Hq Hka Hc Hd3 Ha.
  destruct (rnd_err (a * o)) as [d [e [Hd [He [_ E]]]]]. rewrite E.
  pose proof u_pos. pose proof eta_pos. pose proof (Rabs_pos o).
  replace ((a * o * (1 + d) + e) * (1 + d3) - q * o)
    with ((a * (1 + d) * (1 + d3) - q) * o + e * (1 + d3)) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult.
  assert (R3 : Rabs (1 + d3) <= 1 + u) by (apply Rabs_le; apply Rabs_le_inv in Hd3; lra).
  assert (F : Rabs (a * (1 + d) * (1 + d3) - q)
              <= ((1 + ka) * (1 + u) * (1 + u) - 1) * q + (1 + u) * (1 + u) * c).
  { replace (a * (1 + d) * (1 + d3) - q)
      with ((a - q) * ((1 + d) * (1 + d3)) + q * ((1 + d) * (1 + d3) - 1)) by ring.
    eapply Rle_trans; [apply Rabs_triang|].
    rewrite (Rabs_mult (a - q)), (Rabs_mult q), (Rabs_pos_eq q) by lra.
    assert (P : Rabs ((1 + d) * (1 + d3)) <= (1 + u) * (1 + u)).
    { rewrite Rabs_mult. apply Rmult_le_compat; auto using Rabs_pos.
      apply Rabs_le; apply Rabs_le_inv in Hd; lra. }
    assert (Q : Rabs ((1 + d) * (1 + d3) - 1) <= (1 + u) * (1 + u) - 1) by (apply prod_err; auto).
    assert (Rabs (a - q) * Rabs ((1 + d) * (1 + d3)) <= (ka * q + c) * ((1 + u) * (1 + u)))
      by (apply Rmult_le_compat; auto using Rabs_pos).
    assert (q * Rabs ((1 + d) * (1 + d3) - 1) <= q * ((1 + u) * (1 + u) - 1))
      by (apply Rmult_le_compat_l; lra).
    lra. }
  assert (Rabs (a * (1 + d) * (1 + d3) - q) * Rabs o
          <= (((1 + ka) * (1 + u) * (1 + u) - 1) * q + (1 + u) * (1 + u) * c) * Rabs o)
    by (apply Rmult_le_compat_r; lra).
  assert (Rabs e * Rabs (1 + d3) <= eta * (1 + u)) by (apply Rmult_le_compat; auto using Rabs_pos).
  nra.
Qed.

(** merge_step_error: one fp32 step of PartitionState::merge (lse_state.h) as written, for
    two non-empty states (m1, s1, o1), (m2, s2, o2) whose m's are floats and whose s's are
    >= 0, E1, E2 the values exp_fn returned on the rounded differences:
      M = max(m1, m2) (exact), w_i = rnd(s_i E_i), s = rnd(w1 + w2),
      a_i = rnd(w_i / s), x = rnd(rnd(a1 o1) + rnd(a2 o2)) (no fma: the host builds with
      -ffp-contract=off, nvcc with --fmad=false), o = x clamped to [min, max](o1, o2).
    Against the exact merge of the same inputs, wix = s_i exp(m_i - M), sx = w1x + w2x,
    ox = (w1x o1 + w2x o2) / sx, with gap = |m1 - m2|:
      |s - sx| <= gamma_s * sx + Om,
      |o - ox| <= kappa_o * (w1x |o1| + w2x |o2|) / sx + (1 + u)^2 (c1 |o1| + c2 |o2|)
                  + 2 (1 + u) 2^-150,
    where om_i, Om and c_i are what underflow can cost (zero-free: an exp flushed to zero,
    a product or a quotient below the normal range). *)
Theorem merge_step_error :
  forall m1 s1 o1 m2 s2 o2 E1 E2 e ee,
  fmtb m1 -> fmtb m2 -> 0 <= s1 -> 0 <= s2 -> 0 <= e <= 1 -> 0 <= ee ->
  exp_model e ee E1 (rnd (m1 - Rmax m1 m2)) ->
  exp_model e ee E2 (rnd (m2 - Rmax m1 m2)) ->
  let w1 := rnd (s1 * E1) in
  let w2 := rnd (s2 * E2) in
  let s := rnd (w1 + w2) in
  let a1 := rnd (w1 / s) in
  let a2 := rnd (w2 / s) in
  let x := rnd (rnd (a1 * o1) + rnd (a2 * o2)) in
  let o := LseExact.clamp (LseExact.lo2 o1 o2) (LseExact.hi2 o1 o2) x in
  let w1x := s1 * exp (m1 - Rmax m1 m2) in
  let w2x := s2 * exp (m2 - Rmax m1 m2) in
  let sx := w1x + w2x in
  let ox := (w1x * o1 + w2x * o2) / sx in
  let al := alpha e (Rabs (m1 - m2)) in
  let gs := gamma_s e (Rabs (m1 - m2)) in
  let om1 := (1 + u) * s1 * ee + eta in
  let om2 := (1 + u) * s2 * ee + eta in
  let Om := (1 + u) * (om1 + om2) in
  let den := sx * (1 - gs) - Om in
  let c1 := (1 + u) * (om1 + Om * (1 + al) / (1 - gs)) / den + eta in
  let c2 := (1 + u) * (om2 + Om * (1 + al) / (1 - gs)) / den + eta in
  0 < sx -> gs < 1 -> 0 < den ->
  Rabs (s - sx) <= gs * sx + Om /\
  Rabs (o - ox) <= kappa_o e (Rabs (m1 - m2)) * ((w1x * Rabs o1 + w2x * Rabs o2) / sx)
                   + (1 + u) * (1 + u) * (c1 * Rabs o1 + c2 * Rabs o2) + 2 * ((1 + u) * eta).
Proof.
  intros m1 s1 o1 m2 s2 o2 E1 E2 e ee F1 F2 Hs1 Hs2 He Hee HE1 HE2 w1 w2 s a1 a2 x o
    w1x w2x sx ox al gs om1 om2 Om den c1 c2 Psx Hg Hden.
  assert (S : Rabs (s - sx) <= gs * sx + Om)
    by (apply merge_step_error_s; assumption).
  split; [exact S|].
  pose proof (weight_err_gap s1 m1 m2 m1 E1 e ee F1 F2 (or_introl eq_refl) Hs1 He Hee HE1) as W1.
  pose proof (weight_err_gap s2 m1 m2 m2 E2 e ee F1 F2 (or_intror eq_refl) Hs2 He Hee HE2) as W2.
  fold w1 w2 w1x w2x al om1 om2 in W1, W2.
  assert (Ha : 0 <= al) by (apply alpha_nonneg; [lra|apply Rabs_pos]).
  assert (Hg0 : 0 <= gs) by (apply gamma_s_nonneg; [lra|apply Rabs_pos]).
  assert (P1 : 0 <= w1x) by (unfold w1x; pose proof (exp_pos (m1 - Rmax m1 m2)); nra).
  assert (P2 : 0 <= w2x) by (unfold w2x; pose proof (exp_pos (m2 - Rmax m1 m2)); nra).
  pose proof u_pos. pose proof eta_pos.
  assert (Hom1 : 0 <= om1) by (unfold om1; assert (0 <= s1 * ee) by nra; nra).
  assert (Hom2 : 0 <= om2) by (unfold om2; assert (0 <= s2 * ee) by nra; nra).
  assert (HOm : 0 <= Om) by (unfold Om; nra).
  set (ka := (1 + al) * (1 + u) / (1 - gs) - 1).
  assert (Hka : 0 <= ka).
  { unfold ka. assert (1 <= (1 + al) * (1 + u)) by nra.
    assert (1 <= / (1 - gs)) by (rewrite <- Rinv_1; apply Rinv_le_contravar; lra).
    unfold Rdiv. nra. }
  (* a_i = rnd(w_i / s) against w_ix / sx *)
  assert (Ratio : forall w wx om, 0 <= wx -> wx <= sx -> 0 <= om ->
            Rabs (w - wx) <= al * wx + om ->
            Rabs (rnd (w / s) - wx / sx)
            <= ka * (wx / sx) + ((1 + u) * (om + Om * (1 + al) / (1 - gs)) / den + eta)).
  { intros w wx om Pw Lw Pom Hw.
    eapply Rle_trans.
    { apply (quot_rnd_err w wx s sx wx al om gs Om Psx);
        first [lra | (rewrite Rabs_pos_eq by lra; lra) | assumption | (unfold den in Hden; lra)]. }
    assert (Q : 0 <= wx / sx <= 1).
    { split; [apply Rmult_le_pos; [lra|left; apply Rinv_0_lt_compat; lra]|].
      apply (Rmult_le_reg_r sx); [lra|]. unfold Rdiv. rewrite Rmult_assoc, Rinv_l by lra. lra. }
    apply Rplus_le_compat_l. apply Rplus_le_compat_r.
    unfold Rdiv. apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat; lra|].
    apply Rmult_le_compat_l; [lra|]. apply Rplus_le_compat_l.
    assert (0 <= Om * (1 + al)) by nra.
    assert (0 <= / (1 - gs)) by (left; apply Rinv_0_lt_compat; lra).
    assert (Om * (wx * / sx) * (1 + al) <= Om * (1 + al)).
    { replace (Om * (wx * / sx) * (1 + al)) with (Om * (1 + al) * (wx / sx)) by (unfold Rdiv; ring).
      rewrite <- (Rmult_1_r (Om * (1 + al))) at 2. apply Rmult_le_compat_l; lra. }
    apply Rmult_le_compat_r; lra. }
  assert (A1 : Rabs (a1 - w1x / sx) <= ka * (w1x / sx) + c1)
    by (apply Ratio; auto; unfold sx; lra).
  assert (A2 : Rabs (a2 - w2x / sx) <= ka * (w2x / sx) + c2)
    by (apply Ratio; auto; unfold sx; lra).
  assert (Q1 : 0 <= w1x / sx) by (apply Rmult_le_pos; [lra|left; apply Rinv_0_lt_compat; lra]).
  assert (Q2 : 0 <= w2x / sx) by (apply Rmult_le_pos; [lra|left; apply Rinv_0_lt_compat; lra]).
  assert (Hc1 : 0 <= c1).
  { unfold c1. assert (0 <= (1 + u) * (om1 + Om * (1 + al) / (1 - gs)) / den); [|lra].
    apply Rmult_le_pos; [|left; apply Rinv_0_lt_compat; lra]. apply Rmult_le_pos; [lra|].
    assert (0 <= Om * (1 + al) / (1 - gs)); [|lra].
    apply Rmult_le_pos; [nra|left; apply Rinv_0_lt_compat; lra]. }
  assert (Hc2 : 0 <= c2).
  { unfold c2. assert (0 <= (1 + u) * (om2 + Om * (1 + al) / (1 - gs)) / den); [|lra].
    apply Rmult_le_pos; [|left; apply Rinv_0_lt_compat; lra]. apply Rmult_le_pos; [lra|].
    assert (0 <= Om * (1 + al) / (1 - gs)); [|lra].
    apply Rmult_le_pos; [nra|left; apply Rinv_0_lt_compat; lra]. }
  destruct (rnd_plus _ _ (fmtb_rnd (a1 * o1)) (fmtb_rnd (a2 * o2))) as [d3 [Hd3 R3]].
  pose proof (prod2_err a1 (w1x / sx) o1 ka c1 d3 Q1 Hka Hc1 Hd3 A1) as N1.
  pose proof (prod2_err a2 (w2x / sx) o2 ka c2 d3 Q2 Hka Hc2 Hd3 A2) as N2.
  assert (Ek : (1 + ka) * (1 + u) * (1 + u) - 1 = kappa_o e (Rabs (m1 - m2)))
    by (unfold ka, kappa_o, beta_n; fold al gs; field; lra).
  rewrite Ek in N1, N2.
  assert (Eo : ox = w1x / sx * o1 + w2x / sx * o2) by (unfold ox; field; lra).
  assert (Xb : Rabs (x - ox)
               <= kappa_o e (Rabs (m1 - m2)) * ((w1x * Rabs o1 + w2x * Rabs o2) / sx)
                  + (1 + u) * (1 + u) * (c1 * Rabs o1 + c2 * Rabs o2) + 2 * ((1 + u) * eta)).
  { unfold x. rewrite R3, Eo.
    replace ((rnd (a1 * o1) + rnd (a2 * o2)) * (1 + d3) - (w1x / sx * o1 + w2x / sx * o2))
      with ((rnd (a1 * o1) * (1 + d3) - w1x / sx * o1) + (rnd (a2 * o2) * (1 + d3) - w2x / sx * o2))
      by ring.
    eapply Rle_trans; [apply Rabs_triang|].
    replace ((w1x * Rabs o1 + w2x * Rabs o2) / sx)
      with (w1x / sx * Rabs o1 + w2x / sx * Rabs o2) by (field; lra).
    lra. }
  eapply Rle_trans; [|exact Xb]. apply clamp_closer. unfold ox, sx in *.
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

(** Hypotheses, partition by partition: m is a float and s >= 0; for a non-empty state
    (s <> 0), m <= M <= m + G and exp_fn is within (e_exp, ee) on rnd(m - M). An empty
    state, s = 0, weighs rnd(0 * E) = 0 whatever its m (the code's -inf) and exp_fn
    return, and is skipped, so nothing is assumed about it. Nothing is assumed about
    underflow. *)
Definition part_ok (fe : R -> R) (e ee G M : R) (a : st3) : Prop :=
  input_ok a /\
  (ss a <> 0 -> mm a <= M /\ M - mm a <= G /\
               exp_model e ee (fe (rnd (mm a - M))) (rnd (mm a - M))).

Definition ws_ok (fe : R -> R) (e ee G M : R) (l : list st3) : Prop :=
  Forall (part_ok fe e ee G M) l.

(** Sums with the computed weights: sum_p w_p, sum_p w_p o_p, sum_p w_p |o_p|. *)
Fixpoint csum (f : st3 -> R) (fe : R -> R) (M : R) (l : list st3) : R :=
  match l with [] => 0 | a :: r => ws_weight fe M a * f a + csum f fe M r end.
Definition cw := csum (fun _ => 1).
Definition cn := csum oo.
Definition ca := csum (fun a => Rabs (oo a)).

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

(** One fma acc' = rnd(w * o + acc) = (w o + acc)(1 + d) + e, acc within c B + be of N. *)
Lemma fma_step : forall A N B w o c be d e, 0 <= B -> 0 <= w -> 0 <= c -> 0 <= be ->
  Rabs d <= u -> Rabs e <= eta -> Rabs N <= B -> Rabs (A - N) <= c * B + be ->
  Rabs ((w * o + A) * (1 + d) + e - (N + w * o))
  <= ((1 + c) * (1 + u) - 1) * (B + w * Rabs o) + ((1 + u) * be + eta).
Proof.
  intros A N B w o c be d e HB Hw Hc Hbe Hd He HN H. pose proof u_pos. pose proof (Rabs_pos o).
  replace ((w * o + A) * (1 + d) + e - (N + w * o)) with ((A - N) + (w * o + A) * d + e) by ring.
  pose proof (Rabs_triang ((A - N) + (w * o + A) * d) e) as T1.
  pose proof (Rabs_triang (A - N) ((w * o + A) * d)) as T2.
  rewrite Rabs_mult in T2.
  assert (HA : Rabs (w * o + A) <= w * Rabs o + (1 + c) * B + be).
  { replace (w * o + A) with (w * o + ((A - N) + N)) by ring.
    eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult, (Rabs_pos_eq w) by lra.
    pose proof (Rabs_triang (A - N) N). lra. }
  assert (Rabs (w * o + A) * Rabs d <= (w * Rabs o + (1 + c) * B + be) * u)
    by (apply Rmult_le_compat; auto using Rabs_pos).
  assert (0 <= c * u * B) by (apply Rmult_le_pos; [apply Rmult_le_pos|]; lra).
  assert (0 <= c * (w * Rabs o) * (1 + u)) by (apply Rmult_le_pos; [apply Rmult_le_pos; [|apply Rmult_le_pos]|]; lra).
  assert (0 <= be * u) by nra.
  nra.
Qed.

Lemma ws_weight_nonneg : forall fe e ee G M a, part_ok fe e ee G M a -> 0 <= ws_weight fe M a.
Proof.
  intros fe e ee G M a [[_ Hs] H]. unfold ws_weight. apply rnd_nonneg.
  destruct (Req_dec (ss a) 0) as [Z|NZ]; [rewrite Z; lra|].
  destruct (H NZ) as [_ [_ [HE _]]]. nra.
Qed.

(** The summation, against the computed weights, from any (total, acc) = (T, A) that is
    within its bound of (S, N): each nonzero weight adds one rounding to each sum and
    2^-150 to the accumulator's absolute term. The total's invariant has a second case,
    "nothing added yet" (T = S = 0), whose first addition rnd(0 + w) = w is exact. *)
Lemma ws_sum_gen : forall fe e ee G M l T A S N B kT kA,
  fmtb T -> 0 <= S -> 0 <= B -> Rabs N <= B ->
  ((T = 0 /\ S = 0) \/ Rabs (T - S) <= ((1 + u) ^ kT - 1) * S) ->
  Rabs (A - N) <= ((1 + u) ^ kA - 1) * B + INR kA * eta * (1 + u) ^ kA ->
  ws_ok fe e ee G M l ->
  let r := ws_fold fe M l (T, A) in
  let S' := S + cw fe M l in let N' := N + cn fe M l in let B' := B + ca fe M l in
  ((fst r = 0 /\ S' = 0) \/ Rabs (fst r - S') <= ((1 + u) ^ (kT + length l) - 1) * S') /\
  Rabs (snd r - N') <= ((1 + u) ^ (kA + length l) - 1) * B'
                       + INR (kA + length l) * eta * (1 + u) ^ (kA + length l).
Proof.
  intros fe e ee G M l. induction l as [|a l IH];
    intros T A S N B kT kA FT HS HB HN HT HA Hok r S' N' B'.
  - unfold r, S', N', B', cw, cn, ca. simpl. rewrite !Rplus_0_r, !Nat.add_0_r. auto.
  - inversion Hok as [|a' l' Ha Hl]. subst a' l'.
    pose proof (ws_weight_nonneg fe e ee G M a Ha) as Pw.
    set (w := ws_weight fe M a) in *.
    pose proof u_pos. pose proof eta_pos. pose proof (Rabs_pos (oo a)).
    assert (Ew : ws_fold fe M (a :: l) (T, A) = ws_fold fe M l (ws_add w (oo a) (T, A)))
      by reflexivity.
    assert (ES : S' = (S + w) + cw fe M l) by (unfold S', cw; simpl; fold w; ring).
    assert (EN : N' = (N + w * oo a) + cn fe M l) by (unfold N', cn; simpl; fold w; ring).
    assert (EB : B' = (B + w * Rabs (oo a)) + ca fe M l) by (unfold B', ca; simpl; fold w; ring).
    replace (kT + length (a :: l))%nat with (Nat.succ kT + length l)%nat by (simpl; lia).
    replace (kA + length (a :: l))%nat with (Nat.succ kA + length l)%nat by (simpl; lia).
    unfold r. rewrite Ew, ES, EN, EB.
    unfold ws_add. destruct (Req_EM_T w 0) as [Z|NZ].
    + (* skipped: nothing changes; the bounds only grow *)
      rewrite Z, !Rmult_0_l, !Rplus_0_r.
      apply (IH T A S N B (Nat.succ kT) (Nat.succ kA) FT HS HB HN); auto.
      * destruct HT as [HT|HT]; [left; exact HT|right].
        eapply Rle_trans; [exact HT|]. apply Rmult_le_compat_r; [lra|].
        pose proof (pow1u_mono kT (Nat.succ kT) (Nat.le_succ_diag_r kT)). lra.
      * eapply Rle_trans; [exact HA|].
        pose proof (pow1u_mono kA (Nat.succ kA) (Nat.le_succ_diag_r kA)).
        pose proof (pos_INR kA). pose proof (le_INR kA (Nat.succ kA) (Nat.le_succ_diag_r kA)).
        pose proof (pow1u_ge1 kA).
        apply Rplus_le_compat; [apply Rmult_le_compat_r; lra|].
        apply Rmult_le_compat; try nra.
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
      * destruct (rnd_err (w * oo a + A)) as [d [e' [Hd [He' [_ R]]]]]. rewrite R.
        pose proof (pow1u_ge1 kA). pose proof (pos_INR kA).
        eapply Rle_trans.
        { apply (fma_step A N B w (oo a) ((1 + u) ^ kA - 1) (INR kA * eta * (1 + u) ^ kA) d e');
            auto; try lra. apply Rmult_le_pos; [apply Rmult_le_pos|]; lra. }
        rewrite S_INR. simpl pow.
        replace ((1 + ((1 + u) ^ kA - 1)) * (1 + u) - 1) with ((1 + u) * (1 + u) ^ kA - 1) by ring.
        assert (1 <= (1 + u) * (1 + u) ^ kA) by nra.
        assert (eta <= eta * ((1 + u) * (1 + u) ^ kA)) by nra.
        lra.
Qed.

Lemma ws_ok_inputs : forall fe e ee G M l, ws_ok fe e ee G M l -> Forall input_ok l.
Proof.
  intros fe e ee G M l H. induction H as [|a l [Ha _] _ IH]; constructor; assumption.
Qed.

Lemma ws_computed_sums : forall fe e ee G M l, ws_ok fe e ee G M l ->
  0 <= cw fe M l /\ Rabs (cn fe M l) <= ca fe M l /\ 0 <= ca fe M l.
Proof.
  intros fe e ee G M l H. induction H as [|a l Ha _ [H1 [H2 H3]]].
  - unfold cw, cn, ca. simpl. rewrite Rabs_R0. lra.
  - pose proof (ws_weight_nonneg fe e ee G M a Ha) as Pw. pose proof (Rabs_pos (oo a)).
    unfold cw, cn, ca in *. simpl. split; [nra|]. split; [|nra].
    eapply Rle_trans; [apply Rabs_triang|].
    rewrite Rabs_mult, (Rabs_pos_eq (ws_weight fe M a)) by lra. lra.
Qed.

(** The reduce's two sums against the same sums with the computed weights w_p. Over P
    partitions, total has at most P - 1 roundings (the first nonzero weight is added to 0
    exactly) and each fma chain P, with P absolute terms 2^-150 (an fma result below the
    normal range). *)
Lemma ws_sums_err : forall fe e ee G M l, ws_ok fe e ee G M l ->
  let r := ws_fold fe M l (0, 0) in
  Rabs (fst r - cw fe M l) <= ((1 + u) ^ (length l - 1) - 1) * cw fe M l /\
  Rabs (snd r - cn fe M l) <= ((1 + u) ^ length l - 1) * ca fe M l
                              + INR (length l) * eta * (1 + u) ^ length l.
Proof.
  intros fe e ee G M l Hok r. pose proof u_pos. pose proof eta_pos.
  destruct l as [|a l].
  - unfold r, cw, cn, ca. simpl. rewrite Rminus_0_r, !Rabs_R0. lra.
  - replace (length (a :: l) - 1)%nat with (0 + length l)%nat by (simpl; lia).
    replace (length (a :: l)) with (1 + length l)%nat by reflexivity.
    inversion Hok as [|a' l' Ha Hl]. subst a' l'.
    pose proof (ws_weight_nonneg fe e ee G M a Ha) as Pw.
    set (w := ws_weight fe M a) in *.
    pose proof (Rabs_pos (oo a)).
    destruct (ws_computed_sums fe e ee G M l Hl) as [C1 _].
    assert (ES : cw fe M (a :: l) = (0 + w) + cw fe M l) by (unfold cw; simpl; fold w; ring).
    assert (EN : cn fe M (a :: l) = (0 + w * oo a) + cn fe M l) by (unfold cn; simpl; fold w; ring).
    assert (EB : ca fe M (a :: l) = (0 + w * Rabs (oo a)) + ca fe M l) by (unfold ca; simpl; fold w; ring).
    unfold r. simpl ws_fold. fold w. rewrite ES, EN, EB.
    unfold ws_add. destruct (Req_EM_T w 0) as [Z|NZ].
    + rewrite Z, !Rmult_0_l, !Rplus_0_r in *.
      destruct (ws_sum_gen fe e ee G M l 0 0 0 0 0 0 1 fmtb_0
                  (Rle_refl 0) (Rle_refl 0) (Req_le _ _ Rabs_R0) (or_introl (conj eq_refl eq_refl))
                  ltac:(rewrite Rminus_0_r, Rabs_R0, pow_1; simpl INR; nra) Hl) as [G1 G2].
      split; [|exact G2].
      destruct G1 as [[-> E]|G1]; [|exact G1].
      rewrite E, Rminus_0_r, Rabs_R0. lra.
    + simpl fst in *. simpl snd in *.
      assert (Fw : fmtb w) by apply fmtb_rnd.
      assert (E0 : rnd (0 + w) = w) by (rewrite Rplus_0_l; apply rnd_generic, Fw).
      rewrite E0. rewrite Rplus_0_r.
      destruct (rnd_err (w * oo a)) as [d [e' [Hd [He' [_ R]]]]].
      assert (A1 : Rabs (rnd (w * oo a) - (0 + w * oo a))
                   <= ((1 + u) ^ 1 - 1) * (0 + w * Rabs (oo a)) + INR 1 * eta * (1 + u) ^ 1).
      { rewrite R. replace ((1 + u) ^ 1 - 1) with ((1 + 0) * (1 + u) - 1) by ring.
        replace (w * oo a * (1 + d) + e') with ((w * oo a + 0) * (1 + d) + e') by ring.
        replace (INR 1 * eta * (1 + u) ^ 1) with ((1 + u) * 0 + eta + u * eta) by (simpl; ring).
        assert (0 <= u * eta) by nra.
        eapply Rle_trans; [apply (fma_step 0 0 0 w (oo a) 0 0 d e'); try lra|].
        - rewrite Rabs_R0; lra.
        - rewrite Rminus_0_r, Rabs_R0; lra.
        - lra. }
      destruct (ws_sum_gen fe e ee G M l w (rnd (w * oo a)) (0 + w) (0 + w * oo a) (0 + w * Rabs (oo a))
                  0 1 Fw ltac:(lra) ltac:(nra)
                  ltac:(rewrite Rplus_0_l, Rabs_mult, (Rabs_pos_eq w) by lra; lra)
                  ltac:(right; replace (w - (0 + w)) with 0 by ring; rewrite Rabs_R0; simpl; lra)
                  A1 Hl) as [G1 G2].
      split; [|exact G2].
      destruct G1 as [[-> E]|G1]; [|exact G1].
      rewrite E, Rminus_0_r, Rabs_R0. lra.
Qed.

(** weighted_sum_error: the reduce (WeightedSum) against the exact weighted sum with the
    weights it computed, w_p = rnd(s_p exp_fn(rnd(m_p - M))): over P partitions, with
    g = (1 + u)^(P-1) - 1, b = (1 + u)^P - 1 and be = P 2^-150 (1 + u)^P,
      |total - sum_p w_p|        <= g * sum_p w_p,
      |acc - sum_p w_p o_p|      <= b * sum_p w_p |o_p| + be,
    and the result acc / total, rounded, against sum_p w_p o_p / sum_p w_p, relative to
    sum_p w_p |o_p| / sum_p w_p, within (1 + b)(1 + u)/(1 - g) - 1 (about 2 P u) plus
    (1 + u) be / (sum_p w_p (1 - g)) + 2^-150. These are the reduce's summation constants
    of proofs/error_bound.md. *)
Theorem weighted_sum_error : forall fe e ee G M l, ws_ok fe e ee G M l ->
  let r := ws_fold fe M l (0, 0) in
  let g := (1 + u) ^ (length l - 1) - 1 in
  let b := (1 + u) ^ length l - 1 in
  let be := INR (length l) * eta * (1 + u) ^ length l in
  Rabs (fst r - cw fe M l) <= g * cw fe M l /\
  Rabs (snd r - cn fe M l) <= b * ca fe M l + be /\
  (0 < cw fe M l -> g < 1 ->
   Rabs (ws_result r - cn fe M l / cw fe M l)
   <= ((1 + b) * (1 + u) / (1 - g) - 1) * (ca fe M l / cw fe M l)
      + ((1 + u) * be / (cw fe M l * (1 - g)) + eta)).
Proof.
  intros fe e ee G M l Hok r g b be.
  destruct (ws_sums_err fe e ee G M l Hok) as [T1 A1]. fold r g b be in T1, A1.
  destruct (ws_computed_sums fe e ee G M l Hok) as [Pcw [Nle Pca]].
  pose proof u_pos. pose proof eta_pos.
  pose proof (pow1u_ge1 (length l - 1)). pose proof (pow1u_ge1 (length l)).
  assert (Hbe : 0 <= be) by (unfold be; pose proof (pos_INR (length l)); apply Rmult_le_pos; [apply Rmult_le_pos|]; lra).
  split; [exact T1|]. split; [exact A1|].
  intros Ps Hg.
  assert (Hg0 : 0 <= g) by (unfold g; lra).
  assert (Hb0 : 0 <= b) by (unfold b; lra).
  assert (Pt : 0 < fst r) by (apply Rabs_le_inv in T1; nra).
  unfold ws_result. destruct (Req_EM_T (fst r) 0) as [Z|_]; [lra|].
  eapply Rle_trans.
  { apply (quot_rnd_err (snd r) (cn fe M l) (fst r) (cw fe M l) (ca fe M l) b be g 0);
      first [lra | nra | assumption]. }
  replace (0 * (ca fe M l / cw fe M l) * (1 + b) / (1 - g)) with 0 by (unfold Rdiv; ring).
  rewrite Rplus_0_r, Rminus_0_r. unfold Rdiv. lra.
Qed.

(** Absolute terms of the weights, sum_p [(1 + u) s_p ee + 2^-150] and the same weighted
    by |o_p|. *)
Fixpoint wabs (f : st3 -> R) (ee : R) (l : list st3) : R :=
  match l with [] => 0 | a :: r => ((1 + u) * ss a * ee + eta) * f a + wabs f ee r end.

Lemma wabs_nonneg : forall f ee l, 0 <= ee -> (forall a, 0 <= f a) -> Forall input_ok l ->
  0 <= wabs f ee l.
Proof.
  intros f ee l Hee Hf H. induction H as [|a l [_ Hs] _ IH]; simpl; [lra|].
  pose proof u_pos. pose proof eta_pos. specialize (Hf a).
  assert (0 <= (1 + u) * ss a * ee) by (apply Rmult_le_pos; [apply Rmult_le_pos|]; lra).
  nra.
Qed.

(** The computed weights against the exact ones, w*_p = s_p exp(m_p - M): each within
    alpha e_exp G relatively (weight_err, with M - m_p <= G) plus its absolute term. *)
Lemma ws_weights_err : forall fe e ee G M l, 0 <= e <= 1 -> 0 <= ee -> 0 <= G -> fmtb M ->
  ws_ok fe e ee G M l ->
  Rabs (cw fe M l - sig M l) <= alpha e G * sig M l + wabs (fun _ => 1) ee l /\
  Rabs (cn fe M l - nsum M l) <= alpha e G * asum M l + wabs (fun a => Rabs (oo a)) ee l /\
  ca fe M l <= (1 + alpha e G) * asum M l + wabs (fun a => Rabs (oo a)) ee l.
Proof.
  intros fe e ee G M l He Hee HG FM Hok.
  induction Hok as [|a l Ha Hl IH].
  - unfold cw, cn, ca, nsum, asum. simpl. rewrite Rminus_0_r, Rabs_R0. lra.
  - destruct IH as [I1 [I2 I3]]. destruct Ha as [[Fm Hs] Hne].
    set (w := ws_weight fe M a).
    set (wx := ss a * exp (mm a - M)).
    set (om := (1 + u) * ss a * ee + eta).
    assert (Hal : 0 <= alpha e G) by (apply alpha_nonneg; lra).
    pose proof u_pos. pose proof eta_pos.
    assert (Hom : 0 <= om) by (unfold om; assert (0 <= (1 + u) * ss a * ee) by (apply Rmult_le_pos; [apply Rmult_le_pos|]; lra); lra).
    assert (W' : Rabs (w - wx) <= alpha e G * wx + om).
    { destruct (Req_dec (ss a) 0) as [Z|NZ].
      { unfold w, wx, ws_weight. rewrite Z, !Rmult_0_l, Rminus_0_r.
        rewrite rnd_0, Rabs_R0. lra. }
      destruct (Hne NZ) as [HmM [HGa HE]].
      pose proof (weight_err (ss a) (mm a) M _ e ee Fm FM HmM Hs He Hee HE) as W.
      fold w wx om in W.
      eapply Rle_trans; [exact W|]. apply Rplus_le_compat_r.
      apply Rmult_le_compat_r; [unfold wx; pose proof (exp_pos (mm a - M)); nra|].
      unfold alpha.
      assert (exp ((M - mm a) * u) <= exp (G * u)) by (apply exp_mono, Rmult_le_compat_r; lra).
      apply Rplus_le_compat_r. apply Rmult_le_compat_r; [lra|]. apply Rmult_le_compat_r; lra. }
    pose proof (Rabs_pos (oo a)).
    assert (Pwx : 0 <= wx) by (unfold wx; pose proof (exp_pos (mm a - M)); nra).
    unfold cw, cn, ca, nsum, asum in *. simpl. fold w wx om.
    fold (csum (fun _ => 1) fe M l) (csum oo fe M l) (csum (fun a => Rabs (oo a)) fe M l).
    fold (wsum oo M l) (wsum (fun a => Rabs (oo a)) M l).
    repeat split.
    + replace (w * 1 + csum (fun _ => 1) fe M l - (wx + sig M l))
        with ((w - wx) + (csum (fun _ => 1) fe M l - sig M l)) by ring.
      eapply Rle_trans; [apply Rabs_triang|]. lra.
    + replace (w * oo a + csum oo fe M l - (wx * oo a + wsum oo M l))
        with ((w - wx) * oo a + (csum oo fe M l - wsum oo M l)) by ring.
      eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult.
      assert (Rabs (w - wx) * Rabs (oo a) <= (alpha e G * wx + om) * Rabs (oo a))
        by (apply Rmult_le_compat_r; lra).
      lra.
    + assert (w <= (1 + alpha e G) * wx + om) by (apply Rabs_le_inv in W'; lra).
      assert (w * Rabs (oo a) <= ((1 + alpha e G) * wx + om) * Rabs (oo a))
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
    plus the weights' absolute terms ws = sum_p [(1 + u) s_p ee + 2^-150] (and wo, the
    same weighted by |o_p|) and the accumulator's be = P 2^-150 (1 + u)^P, the result
    acc / total is within (1 + b)(1 + u) / (1 - g) - 1 of nsum / sig, relative to
    asum / sig, plus what those absolute terms cost (quot_rnd_err). *)
Theorem fold_error : forall fe e ee G M l,
  0 <= e <= 1 -> 0 <= ee -> 0 <= G -> fmtb M -> ws_ok fe e ee G M l ->
  let P := length l in
  let r := ws_fold fe M l (0, 0) in
  let g := (1 + alpha e G) * (1 + u) ^ (P - 1) - 1 in
  let b := (1 + alpha e G) * (1 + u) ^ P - 1 in
  let ws := (1 + u) ^ (P - 1) * wabs (fun _ => 1) ee l in
  let wo := (1 + u) ^ P * wabs (fun a => Rabs (oo a)) ee l + INR P * eta * (1 + u) ^ P in
  Rabs (fst r - sig M l) <= g * sig M l + ws /\
  Rabs (snd r - nsum M l) <= b * asum M l + wo /\
  (0 < sig M l -> g < 1 -> 0 < sig M l * (1 - g) - ws ->
   Rabs (ws_result r - nsum M l / sig M l)
   <= ((1 + b) * (1 + u) / (1 - g) - 1) * (asum M l / sig M l)
      + ((1 + u) * (wo + ws * (asum M l / sig M l) * (1 + b) / (1 - g))
         / (sig M l * (1 - g) - ws) + eta)).
Proof.
  intros fe e ee G M l He Hee HG FM Hok P r g b ws wo.
  destruct (ws_sums_err fe e ee G M l Hok) as [T1 A1]. fold r P in T1, A1.
  destruct (ws_weights_err fe e ee G M l He Hee HG FM Hok) as [W1 [W2 W3]].
  destruct (ws_computed_sums fe e ee G M l Hok) as [Pcw [_ Pca]].
  pose proof (ws_ok_inputs _ _ _ _ _ _ Hok) as Fin.
  pose proof (sig_nonneg M l Fin) as Psig. pose proof (asum_nonneg M l Fin) as Pasum.
  pose proof (nsum_le_asum M l Fin) as Nle.
  pose proof (wabs_nonneg (fun _ => 1) ee l Hee ltac:(intros; lra) Fin) as Pw1.
  pose proof (wabs_nonneg (fun a => Rabs (oo a)) ee l Hee ltac:(intros; apply Rabs_pos) Fin) as Pw2.
  assert (Hal : 0 <= alpha e G) by (apply alpha_nonneg; lra).
  pose proof u_pos. pose proof eta_pos.
  pose proof (pow1u_ge1 (P - 1)) as Q1. pose proof (pow1u_ge1 P) as Q2.
  pose proof (pos_INR P).
  set (w1 := wabs (fun _ => 1) ee l) in *. set (w2 := wabs (fun a => Rabs (oo a)) ee l) in *.
  assert (Tot : Rabs (fst r - sig M l) <= g * sig M l + ws).
  { replace (fst r - sig M l) with ((fst r - cw fe M l) + (cw fe M l - sig M l)) by ring.
    eapply Rle_trans; [apply Rabs_triang|].
    assert (cw fe M l <= (1 + alpha e G) * sig M l + w1) by (apply Rabs_le_inv in W1; lra).
    assert (((1 + u) ^ (P - 1) - 1) * cw fe M l
            <= ((1 + u) ^ (P - 1) - 1) * ((1 + alpha e G) * sig M l + w1))
      by (apply Rmult_le_compat_l; lra).
    unfold g, ws. nra. }
  assert (Acc : Rabs (snd r - nsum M l) <= b * asum M l + wo).
  { replace (snd r - nsum M l) with ((snd r - cn fe M l) + (cn fe M l - nsum M l)) by ring.
    eapply Rle_trans; [apply Rabs_triang|].
    assert (((1 + u) ^ P - 1) * ca fe M l <= ((1 + u) ^ P - 1) * ((1 + alpha e G) * asum M l + w2))
      by (apply Rmult_le_compat_l; lra).
    unfold b, wo. nra. }
  split; [exact Tot|]. split; [exact Acc|].
  intros Ps Hg Hden.
  assert (Hg0 : 0 <= g) by (unfold g; nra).
  assert (Hb0 : 0 <= b) by (unfold b; nra).
  assert (Hws : 0 <= ws) by (unfold ws; nra).
  assert (Hwo : 0 <= wo).
  { unfold wo. assert (0 <= INR P * eta * (1 + u) ^ P) by (apply Rmult_le_pos; [apply Rmult_le_pos|]; lra). nra. }
  assert (Pt : 0 < fst r) by (apply Rabs_le_inv in Tot; nra).
  unfold ws_result. destruct (Req_EM_T (fst r) 0) as [Z|_]; [lra|].
  apply (quot_rnd_err (snd r) (nsum M l) (fst r) (sig M l) (asum M l) b wo g ws);
    first [lra | nra | assumption].
Qed.
