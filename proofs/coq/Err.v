(** Generic error algebra: compositions of relative and absolute errors, one rounding
    after an already inexact value, a quotient of two inexact values. *)
From Coq Require Import Reals Lra.
From Flocq Require Import Raux.
From PagedAttn Require Import Fp.
Open Scope R_scope.

Lemma exp_mono : forall x y, x <= y -> exp x <= exp y.
Proof.
  intros x y H. destruct (Req_dec x y) as [->|N]; [lra|].
  apply Rlt_le, exp_increasing. lra.
Qed.

Lemma Rabs_le_between : forall x a b, a <= x <= b -> Rabs x <= Rmax (Rabs a) (Rabs b).
Proof.
  intros x a b [H1 H2]. unfold Rmax. destruct (Rle_dec (Rabs a) (Rabs b));
    unfold Rabs in *; repeat destruct (Rcase_abs _); lra.
Qed.

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

(** An error bounded by c * b + d (b > 0) is a relative part and an absolute part. *)
Lemma split_err : forall a b c d, 0 < b -> 0 <= c -> 0 <= d -> Rabs (a - b) <= c * b + d ->
  exists eps z, Rabs eps <= c /\ Rabs z <= d /\ a = b * (1 + eps) + z.
Proof.
  intros a b c d Hb Hc Hd H.
  destruct (Rle_dec (Rabs (a - b)) (c * b)) as [Sm|Bg].
  - exists ((a - b) / b), 0. split; [|split].
    + unfold Rdiv. rewrite Rabs_mult, Rabs_inv, (Rabs_pos_eq b) by lra.
      apply (Rmult_le_reg_r b); [lra|]. rewrite Rmult_assoc, Rinv_l by lra. lra.
    + rewrite Rabs_R0. lra.
    + field. lra.
  - destruct (Rle_dec 0 (a - b)) as [P|N].
    + rewrite Rabs_pos_eq in H, Bg by lra.
      exists c, (a - b - c * b). rewrite (Rabs_pos_eq c) by lra.
      split; [lra|]. split; [rewrite Rabs_pos_eq; lra|ring].
    + rewrite Rabs_left in H, Bg by lra.
      exists (- c), (a - b + c * b). rewrite Rabs_Ropp, (Rabs_pos_eq c) by lra.
      split; [lra|]. split; [rewrite Rabs_left1; lra|ring].
Qed.

(** One rounding of z, itself within |z - y| of y. *)
Lemma rnd_near : forall z y, Rabs (rnd z - y) <= (1 + u) * Rabs (z - y) + u * Rabs y + eta.
Proof.
  intros z y. pose proof (rnd_abs z). pose proof u_pos.
  assert (Rabs z <= Rabs (z - y) + Rabs y).
  { replace z with ((z - y) + y) at 1 by ring. apply Rabs_triang. }
  replace (rnd z - y) with ((rnd z - z) + (z - y)) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. nra.
Qed.

Lemma cvt_near : forall s z y,
  Rabs (cvt s z - y) <= (1 + us s) * Rabs (z - y) + us s * Rabs y + etas s.
Proof.
  intros s z y. pose proof (cvt_abs s z). pose proof (us_nonneg s).
  assert (Rabs z <= Rabs (z - y) + Rabs y).
  { replace z with ((z - y) + y) at 1 by ring. apply Rabs_triang. }
  replace (cvt s z - y) with ((cvt s z - z) + (z - y)) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. nra.
Qed.

(** The quotient of two inexact values: n within b A + bn of nx (|nx| <= A), s within
    g sx + bs of sx > 0, with sx (1 - g) - bs > 0. *)
Lemma quot_err : forall n nx s sx A b bn g bs,
  0 < sx -> Rabs nx <= A -> 0 <= b -> 0 <= bn -> 0 <= g -> 0 <= bs ->
  Rabs (n - nx) <= b * A + bn -> Rabs (s - sx) <= g * sx + bs -> 0 < sx * (1 - g) - bs ->
  Rabs (n / s - nx / sx) <= (b * A + bn + g * A + bs * (A / sx)) / (sx * (1 - g) - bs).
Proof.
  intros n nx s sx A b bn g bs Psx HA Hb Hbn Hg Hbs Hn Hs Hden.
  assert (Ps : sx * (1 - g) - bs <= s) by (apply Rabs_le_inv in Hs; lra).
  assert (Ps' : 0 < s) by lra.
  assert (PA : 0 <= A) by (pose proof (Rabs_pos nx); lra).
  replace (n / s - nx / sx) with (((n - nx) * sx - nx * (s - sx)) / (s * sx)) by (field; lra).
  unfold Rdiv at 1. rewrite Rabs_mult, Rabs_inv, (Rabs_pos_eq (s * sx)) by nra.
  assert (Num : Rabs ((n - nx) * sx - nx * (s - sx)) <= (b * A + bn) * sx + A * (g * sx + bs)).
  { unfold Rminus at 1. eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_Ropp, !Rabs_mult.
    rewrite (Rabs_pos_eq sx) by lra.
    assert (Rabs (n - nx) * sx <= (b * A + bn) * sx) by (apply Rmult_le_compat_r; lra).
    assert (Rabs nx * Rabs (s - sx) <= A * (g * sx + bs))
      by (apply Rmult_le_compat; auto using Rabs_pos).
    lra. }
  apply Rle_trans with (((b * A + bn) * sx + A * (g * sx + bs)) * / (s * sx)).
  - apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat; nra|exact Num].
  - replace (((b * A + bn) * sx + A * (g * sx + bs)) * / (s * sx))
      with ((b * A + bn + g * A + bs * (A / sx)) / s) by (field; lra).
    unfold Rdiv. apply Rmult_le_compat_l.
    + assert (0 <= A / sx) by (apply Rmult_le_pos; [lra|left; apply Rinv_0_lt_compat; lra]).
      assert (0 <= b * A) by nra. assert (0 <= g * A) by nra. assert (0 <= bs * (A / sx)) by nra.
      lra.
    + apply Rinv_le_contravar; lra.
Qed.

(** (1 + x)(1 + y) - 1 for nonnegative x, y. *)
Lemma prod_err : forall x y a b, Rabs x <= a -> Rabs y <= b ->
  Rabs ((1 + x) * (1 + y) - 1) <= (1 + a) * (1 + b) - 1.
Proof.
  intros x y a b Hx Hy. pose proof (Rabs_pos x). pose proof (Rabs_pos y).
  replace ((1 + x) * (1 + y) - 1) with (x + y + x * y) by ring.
  eapply Rle_trans; [apply Rabs_triang|].
  eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|]. rewrite Rabs_mult.
  assert (Rabs x * Rabs y <= a * b) by (apply Rmult_le_compat; lra). nra.
Qed.

(** The rounded quotient rnd(n / s): the relative constant (1 + b)(1 + u)/(1 - g) - 1 of
    the exact-operand case, plus what the absolute parts bn, bs cost. *)
Lemma quot_rnd_err : forall n nx s sx A b bn g bs,
  0 < sx -> Rabs nx <= A -> 0 <= b -> 0 <= bn -> 0 <= g < 1 -> 0 <= bs ->
  Rabs (n - nx) <= b * A + bn -> Rabs (s - sx) <= g * sx + bs -> 0 < sx * (1 - g) - bs ->
  Rabs (rnd (n / s) - nx / sx)
  <= ((1 + b) * (1 + u) / (1 - g) - 1) * (A / sx)
     + ((1 + u) * (bn + bs * (A / sx) * (1 + b) / (1 - g)) / (sx * (1 - g) - bs) + eta).
Proof.
  intros n nx s sx A b bn g bs Psx HA Hb Hbn Hg Hbs Hn Hs Hden.
  pose proof (quot_err n nx s sx A b bn g bs Psx HA Hb Hbn (proj1 Hg) Hbs Hn Hs Hden) as Q.
  pose proof (rnd_near (n / s) (nx / sx)) as R. pose proof u_pos.
  assert (PA : 0 <= A) by (pose proof (Rabs_pos nx); lra).
  set (q := A / sx) in *. set (den := sx * (1 - g) - bs) in *.
  assert (Pq : 0 <= q) by (apply Rmult_le_pos; [lra|left; apply Rinv_0_lt_compat; lra]).
  assert (Hq : Rabs (nx / sx) <= q).
  { unfold Rdiv. rewrite Rabs_mult, Rabs_inv, (Rabs_pos_eq sx) by lra.
    apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat; lra|exact HA]. }
  assert (EA : A = q * sx) by (unfold q; field; lra).
  assert (Eden : den = sx * (1 - g) - bs) by reflexivity.
  clearbody q den.
  assert (E1 : (b * A + bn + g * A + bs * q) / den
               = (b + g) / (1 - g) * q + ((b + g) * q * bs / (1 - g) + bn + bs * q) / den).
  { rewrite EA. field_simplify_eq; [rewrite Eden; ring|split; lra]. }
  rewrite E1 in Q.
  assert (E2 : (1 + u) * ((b + g) / (1 - g) * q) + u * q = ((1 + b) * (1 + u) / (1 - g) - 1) * q)
    by (field; lra).
  assert (E3 : (b + g) * q * bs / (1 - g) + bn + bs * q = bn + bs * q * (1 + b) / (1 - g))
    by (field; lra).
  rewrite E3 in Q.
  assert (Rabs (rnd (n / s) - nx / sx)
          <= (1 + u) * ((b + g) / (1 - g) * q + (bn + bs * q * (1 + b) / (1 - g)) / den)
             + u * q + eta).
  { eapply Rle_trans; [exact R|].
    assert ((1 + u) * Rabs (n / s - nx / sx)
            <= (1 + u) * ((b + g) / (1 - g) * q + (bn + bs * q * (1 + b) / (1 - g)) / den))
      by (apply Rmult_le_compat_l; lra).
    assert (u * Rabs (nx / sx) <= u * q) by (apply Rmult_le_compat_l; lra).
    lra. }
  replace ((1 + u) * (bn + bs * q * (1 + b) / (1 - g)) / den)
    with ((1 + u) * ((bn + bs * q * (1 + b) / (1 - g)) / den)) by (unfold Rdiv; ring).
  lra.
Qed.
