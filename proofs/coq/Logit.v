(** Section 3 of proofs/error_bound.md: the error of one computed logit (the q.k tree of
    the kernel, the scale, fp8 keys, ALiBi), and that no value of the fast q.k tree can
    overflow under the bound's precondition logit_pre (the first step to excluding
    slow_logit, the rescue path; proofs/README.md, "The rare paths"). *)
From Coq Require Import Reals List Lra Lia.
From Flocq Require Import Core.
From PagedAttn Require Import Fp Sums Err Model.
Open Scope R_scope.

(** The constants of one logit. *)
Definition lg_c (nm : numerics) (sc ks : R) : R :=
  if andb (n_fp8 nm) (negb (n_vl nm)) then sc * ks else sc.
Definition lg_uq (nm : numerics) (sc ks : R) : R :=
  if andb (n_fp8 nm) (negb (n_vl nm)) then uc (sc * ks) else 0.
Definition lg_rk (nm : numerics) : R :=
  if andb (n_fp8 nm) (n_vl nm) then (1 + u) * (1 + us (n_s nm)) - 1 else 0.
Definition lg_ek (nm : numerics) : R :=
  if andb (n_fp8 nm) (n_vl nm) then eta * (1 + us (n_s nm)) + etas (n_s nm) else 0.
(** The exact key in the units the fma reads (k_scale folded into lg_c for ours). *)
Definition lg_kx (nm : numerics) (ks kr : R) : R :=
  if andb (n_fp8 nm) (n_vl nm) then kr * ks else kr.

Definition hdot (g : geom) : nat := (g_vec g * g_J g + g_lg g)%nat.
Definition gdot (g : geom) (nm : numerics) (sc ks : R) : R :=
  (1 + lg_uq nm sc ks) * (1 + u) * (1 + u) ^ hdot g * (1 + lg_rk nm) - 1.
Definition eta_q0 (g : geom) (nm : numerics) (sc ks Sq : R) : R :=
  (1 + lg_uq nm sc ks) * (1 + u) * Rabs (lg_c nm sc ks)
  * ((1 + u) ^ hdot g * lg_ek nm * Sq + INR (g_D g) * eta * (1 + u) ^ hdot g) + eta.
Definition eta_q (g : geom) (nm : numerics) (sc ks Sq : R) : R :=
  (1 + u) * eta_q0 g nm sc ks Sq + eta.

(** Q = |scale| sum_d |q_d k_d|, k dequantized. *)
Definition Qmag (g : geom) (nm : numerics) (sc ks : R) (q kr : nat -> R) : R :=
  Rabs sc * sumn (fun d => Rabs (q d * (if n_fp8 nm then kr d * ks else kr d))) (g_D g).

Lemma lg_uq_nonneg : forall nm sc ks, 0 <= lg_uq nm sc ks.
Proof.
  intros nm sc ks. unfold lg_uq. destruct (andb _ _); [|lra].
  eapply Rle_trans; [apply u_pos|apply uc_ge_u].
Qed.
Lemma lg_rk_nonneg : forall nm, 0 <= lg_rk nm.
Proof.
  intros nm. unfold lg_rk. destruct (andb _ _); [|lra].
  pose proof u_pos. pose proof (us_nonneg (n_s nm)). nra.
Qed.
Lemma lg_ek_nonneg : forall nm, 0 <= lg_ek nm.
Proof.
  intros nm. unfold lg_ek. destruct (andb _ _); [|lra].
  pose proof eta_pos. pose proof (us_nonneg (n_s nm)). pose proof (etas_nonneg (n_s nm)). nra.
Qed.

Lemma key_err : forall nm ks kr,
  Rabs (key_used nm ks kr - lg_kx nm ks kr) <= lg_rk nm * Rabs (lg_kx nm ks kr) + lg_ek nm.
Proof.
  intros nm ks kr. unfold key_used, lg_kx, lg_rk, lg_ek. destruct (andb _ _).
  - destruct (rnd_err (kr * ks)) as [d1 [e1 [Hd1 [He1 [_ E1]]]]].
    destruct (cvt_err (n_s nm) (rnd (kr * ks))) as [d2 [e2 [Hd2 [He2 E2]]]].
    rewrite E2, E1. set (y := kr * ks). pose proof u_pos. pose proof eta_pos.
    pose proof (us_nonneg (n_s nm)). pose proof (Rabs_pos y).
    replace ((y * (1 + d1) + e1) * (1 + d2) + e2 - y)
      with (y * ((1 + d1) * (1 + d2) - 1) + (e1 * (1 + d2) + e2)) by ring.
    eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult.
    assert (P1 : Rabs ((1 + d1) * (1 + d2) - 1) <= (1 + u) * (1 + us (n_s nm)) - 1)
      by (apply prod_err; auto).
    assert (P2 : Rabs (e1 * (1 + d2) + e2) <= eta * (1 + us (n_s nm)) + etas (n_s nm)).
    { eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult.
      assert (Rabs (1 + d2) <= 1 + us (n_s nm))
        by (apply Rabs_le; apply Rabs_le_inv in Hd2; lra).
      assert (Rabs e1 * Rabs (1 + d2) <= eta * (1 + us (n_s nm)))
        by (apply Rmult_le_compat; auto using Rabs_pos).
      lra. }
    assert (Rabs y * Rabs ((1 + d1) * (1 + d2) - 1) <= ((1 + u) * (1 + us (n_s nm)) - 1) * Rabs y)
      by (rewrite Rmult_comm; apply Rmult_le_compat_r; auto).
    lra.
  - replace (kr - kr) with 0 by ring. rewrite Rabs_R0, Rmult_0_l. lra.
Qed.

Lemma qk_scale_err : forall nm sc ks,
  Rabs (qk_scale nm sc ks - lg_c nm sc ks) <= lg_uq nm sc ks * Rabs (lg_c nm sc ks).
Proof.
  intros nm sc ks. unfold qk_scale, lg_c, lg_uq. destruct (andb _ _).
  - apply rnd_rel_uc.
  - replace (sc - sc) with 0 by ring. rewrite Rabs_R0. lra.
Qed.

(** The exact logit in the units the kernel computes it in. *)
Lemma logit_exact_eq : forall g nm sc ks q kr slope pos,
  logit_exact g nm sc ks q kr slope pos
  = lg_c nm sc ks * sumn (fun d => q d * lg_kx nm ks (kr d)) (g_D g) + slope * pos.
Proof.
  intros g nm sc ks q kr slope pos. unfold logit_exact, lg_c, lg_kx.
  destruct (n_fp8 nm), (n_vl nm); simpl; try reflexivity.
  f_equal. rewrite <- !sumn_scal. apply sumn_ext. intros. ring.
Qed.

Lemma Qmag_eq : forall g nm sc ks q kr,
  Qmag g nm sc ks q kr
  = Rabs (lg_c nm sc ks) * sumn (fun d => Rabs (q d * lg_kx nm ks (kr d))) (g_D g).
Proof.
  intros g nm sc ks q kr. unfold Qmag, lg_c, lg_kx.
  destruct (n_fp8 nm), (n_vl nm); simpl; try reflexivity.
  rewrite <- !sumn_scal. apply sumn_ext. intros.
  rewrite !Rabs_mult. ring.
Qed.

Lemma g_D_eq : forall g, g_D g = (2 ^ g_lg g * g_vec g * g_J g)%nat.
Proof. reflexivity. Qed.

(** The dot product against the exact q.k (keys exact, in the fma's units). *)
Lemma dot_err : forall g nm ks (q kr : nat -> R) Sq, (0 < g_vec g)%nat ->
  sumn (fun d => Rabs (q d)) (g_D g) <= Sq ->
  let t := tree_dot (g_lg g) (g_vec g) (g_D g) q (fun d => key_used nm ks (kr d)) in
  let X := sumn (fun d => q d * lg_kx nm ks (kr d)) (g_D g) in
  let M := sumn (fun d => Rabs (q d * lg_kx nm ks (kr d))) (g_D g) in
  Rabs (cv t - X) <= ((1 + u) ^ hdot g * (1 + lg_rk nm) - 1) * M
                     + ((1 + u) ^ hdot g * lg_ek nm * Sq + INR (g_D g) * eta * (1 + u) ^ hdot g).
Proof.
  intros g nm ks q kr Sq Hv HSq t X M.
  destruct (tree_dot_props (g_lg g) (g_vec g) (g_J g) q (fun d => key_used nm ks (kr d)) Hv)
    as [Xt [Mt [Nt [Ht Lt]]]].
  fold (g_D g) in Xt, Mt, Nt, Ht, Lt. fold t in Xt, Mt, Nt, Ht, Lt.
  pose proof (tree_err t Lt) as TE. rewrite Xt, Mt, Nt in TE.
  pose proof u_pos. pose proof eta_pos. pose proof (lg_rk_nonneg nm). pose proof (lg_ek_nonneg nm).
  set (h := hdot g) in *.
  assert (Hh : (ht t <= h)%nat) by (unfold h, hdot; lia).
  pose proof (g_mono _ _ Hh) as Gm. pose proof (pow1u_mono _ _ Hh) as Pm.
  pose proof (pow1u_ge1 (ht t)). pose proof (pow1u_ge1 h).
  set (Mk := sumn (fun d => Rabs (q d * key_used nm ks (kr d))) (g_D g)) in *.
  set (Xk := sumn (fun d => q d * key_used nm ks (kr d)) (g_D g)) in *.
  set (Sa := sumn (fun d => Rabs (q d)) (g_D g)) in *.
  assert (PM : 0 <= M) by (apply sumn_nonneg; intros; apply Rabs_pos).
  assert (PSa : 0 <= Sa) by (apply sumn_nonneg; intros; apply Rabs_pos).
  assert (Pt : forall d, Rabs (q d * key_used nm ks (kr d) - q d * lg_kx nm ks (kr d))
                         <= lg_rk nm * Rabs (q d * lg_kx nm ks (kr d)) + lg_ek nm * Rabs (q d)).
  { intros d. replace (q d * key_used nm ks (kr d) - q d * lg_kx nm ks (kr d))
      with (q d * (key_used nm ks (kr d) - lg_kx nm ks (kr d))) by ring.
    rewrite !Rabs_mult. pose proof (key_err nm ks (kr d)). pose proof (Rabs_pos (q d)).
    assert (Rabs (q d) * Rabs (key_used nm ks (kr d) - lg_kx nm ks (kr d))
            <= Rabs (q d) * (lg_rk nm * Rabs (lg_kx nm ks (kr d)) + lg_ek nm))
      by (apply Rmult_le_compat_l; lra).
    lra. }
  assert (K1 : Rabs (Xk - X) <= lg_rk nm * M + lg_ek nm * Sa).
  { unfold Xk, X. rewrite <- sumn_minus. eapply Rle_trans; [apply sumn_abs|].
    unfold M, Sa. rewrite <- !sumn_scal, <- sumn_plus. apply sumn_le. intros. apply Pt. }
  assert (K2 : Mk <= (1 + lg_rk nm) * M + lg_ek nm * Sa).
  { unfold Mk. apply Rle_trans with (sumn (fun d => Rabs (q d * lg_kx nm ks (kr d))
        + (lg_rk nm * Rabs (q d * lg_kx nm ks (kr d)) + lg_ek nm * Rabs (q d))) (g_D g)).
    - apply sumn_le. intros d _. pose proof (Pt d) as Pd.
      pose proof (Rabs_triang (q d * lg_kx nm ks (kr d))
                    (q d * key_used nm ks (kr d) - q d * lg_kx nm ks (kr d))) as Tr.
      replace (q d * lg_kx nm ks (kr d) + (q d * key_used nm ks (kr d) - q d * lg_kx nm ks (kr d)))
        with (q d * key_used nm ks (kr d)) in Tr by ring.
      lra.
    - rewrite !sumn_plus, !sumn_scal. fold M Sa. lra. }
  assert (TE' : Rabs (cv t - Xk) <= Sums.g h * Mk + INR (g_D g) * eta * (1 + u) ^ h).
  { eapply Rle_trans; [exact TE|]. pose proof (mv_nonneg t) as Mv. rewrite Mt in Mv.
    assert (Sums.g (ht t) * Mk <= Sums.g h * Mk) by (apply Rmult_le_compat_r; lra).
    assert (INR (g_D g) * eta * (1 + u) ^ ht t <= INR (g_D g) * eta * (1 + u) ^ h)
      by (apply Rmult_le_compat_l; [apply Rmult_le_pos; [apply pos_INR|lra]|lra]).
    lra. }
  replace (cv t - X) with ((cv t - Xk) + (Xk - X)) by ring.
  eapply Rle_trans; [apply Rabs_triang|].
  assert (Sums.g h * Mk <= Sums.g h * ((1 + lg_rk nm) * M + lg_ek nm * Sa))
    by (apply Rmult_le_compat_l; [apply g_nonneg|lra]).
  assert (lg_ek nm * Sa <= lg_ek nm * Sq) by (apply Rmult_le_compat_l; lra).
  unfold Sums.g in *.
  assert (((1 + u) ^ h - 1) * (lg_ek nm * Sa) + lg_ek nm * Sa <= (1 + u) ^ h * lg_ek nm * Sq).
  { replace (((1 + u) ^ h - 1) * (lg_ek nm * Sa) + lg_ek nm * Sa) with ((1 + u) ^ h * (lg_ek nm * Sa)) by ring.
    rewrite Rmult_assoc. apply Rmult_le_compat_l; lra. }
  nra.
Qed.

(** The logit error (3.1)-(3.3): |x_hat - x| <= gdot (1 + u) Q + u |x| + eta_q. *)
Theorem logit_err : forall g nm sc ks (q kr : nat -> R) slope pos Sq, (0 < g_vec g)%nat ->
  sumn (fun d => Rabs (q d)) (g_D g) <= Sq ->
  let x := logit_exact g nm sc ks q kr slope pos in
  Rabs (logit_hat g nm sc ks q kr slope pos - x)
  <= gdot g nm sc ks * (1 + u) * Qmag g nm sc ks q kr + u * Rabs x + eta_q g nm sc ks Sq.
Proof.
  intros g nm sc ks q kr slope pos Sq Hv HSq x.
  pose proof (dot_err g nm ks q kr Sq Hv HSq) as DE. cbv zeta in DE.
  set (t := tree_dot (g_lg g) (g_vec g) (g_D g) q (fun d => key_used nm ks (kr d))) in *.
  set (X := sumn (fun d => q d * lg_kx nm ks (kr d)) (g_D g)) in *.
  set (M := sumn (fun d => Rabs (q d * lg_kx nm ks (kr d))) (g_D g)) in *.
  set (c := lg_c nm sc ks). set (uq := lg_uq nm sc ks). set (qk := qk_scale nm sc ks).
  pose proof (qk_scale_err nm sc ks) as QE. fold c uq qk in QE.
  pose proof u_pos. pose proof eta_pos. pose proof (lg_uq_nonneg nm sc ks). fold uq in H1.
  pose proof (lg_rk_nonneg nm). pose proof (lg_ek_nonneg nm).
  assert (PM : 0 <= M) by (apply sumn_nonneg; intros; apply Rabs_pos).
  assert (HX : Rabs X <= M) by apply sumn_abs.
  assert (EQ : Qmag g nm sc ks q kr = Rabs c * M) by (unfold c, M; apply Qmag_eq).
  assert (Ex : x = c * X + slope * pos) by (unfold x, c, X; apply logit_exact_eq).
  rewrite EQ. set (x0 := c * X).
  set (h := hdot g) in *.
  set (Ab := (1 + u) ^ h * lg_ek nm * Sq + INR (g_D g) * eta * (1 + u) ^ h) in *.
  set (E := cv t - X).
  (* the scaled dot product *)
  assert (Z1 : Rabs (cv t * qk - x0) <= (1 + uq) * Rabs c * Rabs E + uq * (Rabs c * M)).
  { replace (cv t * qk - x0) with (E * qk + X * (qk - c)) by (unfold E, x0; ring).
    eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult.
    assert (Rabs qk <= (1 + uq) * Rabs c).
    { replace qk with ((qk - c) + c) by ring. eapply Rle_trans; [apply Rabs_triang|]. lra. }
    assert (Rabs E * Rabs qk <= Rabs E * ((1 + uq) * Rabs c))
      by (apply Rmult_le_compat_l; [apply Rabs_pos|lra]).
    assert (Rabs X * Rabs (qk - c) <= M * (uq * Rabs c))
      by (apply Rmult_le_compat; auto using Rabs_pos).
    lra. }
  assert (L0 : Rabs (rnd (cv t * qk) - x0)
               <= gdot g nm sc ks * (Rabs c * M) + eta_q0 g nm sc ks Sq).
  { eapply Rle_trans; [apply rnd_near|].
    assert (Hx0 : Rabs x0 <= Rabs c * M)
      by (unfold x0; rewrite Rabs_mult; apply Rmult_le_compat_l; [apply Rabs_pos|exact HX]).
    assert (HE : Rabs c * Rabs E <= ((1 + u) ^ h * (1 + lg_rk nm) - 1) * (Rabs c * M) + Rabs c * Ab).
    { replace (((1 + u) ^ h * (1 + lg_rk nm) - 1) * (Rabs c * M) + Rabs c * Ab)
        with (Rabs c * (((1 + u) ^ h * (1 + lg_rk nm) - 1) * M + Ab)) by ring.
      apply Rmult_le_compat_l; [apply Rabs_pos|exact DE]. }
    unfold gdot, eta_q0. fold uq c h. fold Ab.
    pose proof (Rabs_pos c). pose proof (Rabs_pos E).
    assert ((1 + u) * ((1 + uq) * Rabs c * Rabs E)
            <= (1 + u) * (1 + uq) * (((1 + u) ^ h * (1 + lg_rk nm) - 1) * (Rabs c * M) + Rabs c * Ab)).
    { replace ((1 + u) * ((1 + uq) * Rabs c * Rabs E)) with (((1 + u) * (1 + uq)) * (Rabs c * Rabs E)) by ring.
      apply Rmult_le_compat_l; [nra|exact HE]. }
    assert ((1 + u) * Rabs (cv t * qk - x0) <= (1 + u) * ((1 + uq) * Rabs c * Rabs E + uq * (Rabs c * M)))
      by (apply Rmult_le_compat_l; lra).
    assert (u * Rabs x0 <= u * (Rabs c * M)) by (apply Rmult_le_compat_l; lra).
    assert (E1 : (1 + u) * (1 + uq) * (((1 + u) ^ h * (1 + lg_rk nm) - 1) * (Rabs c * M))
                 + (1 + u) * (uq * (Rabs c * M)) + u * (Rabs c * M)
                 = ((1 + uq) * (1 + u) * (1 + u) ^ h * (1 + lg_rk nm) - 1) * (Rabs c * M)) by ring.
    assert (E2 : (1 + u) * (1 + uq) * (Rabs c * Ab) = (1 + uq) * (1 + u) * Rabs c * Ab) by ring.
    lra. }
  unfold logit_hat. fold t qk. rewrite Ex.
  eapply Rle_trans.
  { replace (slope * pos + rnd (cv t * qk)) with ((x0 + slope * pos) + (rnd (cv t * qk) - x0)) by ring.
    apply rnd_near. }
  replace (x0 + slope * pos + (rnd (cv t * qk) - x0) - (c * X + slope * pos))
    with (rnd (cv t * qk) - x0) by (unfold x0; ring).
  unfold eta_q.
  assert ((1 + u) * Rabs (rnd (cv t * qk) - x0)
          <= (1 + u) * (gdot g nm sc ks * (Rabs c * M) + eta_q0 g nm sc ks Sq))
    by (apply Rmult_le_compat_l; lra).
  lra.
Qed.

(** Without ALiBi the kernel skips the fma: that is slope = 0 here. *)
Lemma alibi_off : forall y pos, fmtb y -> rnd (0 * pos + y) = y.
Proof. intros y pos F. rewrite Rmult_0_l, Rplus_0_l. apply rnd_generic, F. Qed.

(** Under the precondition logit_pre (Bound.v), no intermediate value of the fast q.k tree
    exceeds FLT_MAX, so IEEE computes what this model computes there. The product by
    qk_scale and the ALiBi fma after the tree are not covered here, so this alone does not
    show that the kernel's test !finite(logit) never sends the token to slow_logit. *)
Theorem logit_no_overflow : forall g nm ks (q kr : nat -> R) Sq Km, (0 < g_vec g)%nat ->
  sumn (fun d => Rabs (q d)) (g_D g) <= Sq ->
  sumn (fun d => Rabs (q d * lg_kx nm ks (kr d))) (g_D g) <= Km ->
  (1 + u) ^ hdot g * ((1 + lg_rk nm) * Km + lg_ek nm * Sq + INR (g_D g) * eta) <= flt_max ->
  forall s, sub s (tree_dot (g_lg g) (g_vec g) (g_D g) q (fun d => key_used nm ks (kr d))) ->
  Rabs (cv s) <= flt_max.
Proof.
  intros g nm sc q kr Sq Km Hv HSq HK Hpre s Hs.
  set (t := tree_dot (g_lg g) (g_vec g) (g_D g) q (fun d => key_used nm sc (kr d))) in *.
  destruct (tree_dot_props (g_lg g) (g_vec g) (g_J g) q (fun d => key_used nm sc (kr d)) Hv)
    as [Xt [Mt [Nt [Ht Lt]]]].
  fold (g_D g) t in Xt, Mt, Nt, Ht, Lt.
  eapply Rle_trans; [apply (sub_bound s t Hs Lt)|]. rewrite Nt, Mt.
  pose proof u_pos. pose proof eta_pos. pose proof (lg_rk_nonneg nm). pose proof (lg_ek_nonneg nm).
  assert (Hh : (ht t <= hdot g)%nat) by (unfold hdot; lia).
  pose proof (pow1u_mono _ _ Hh). pose proof (pow1u_ge1 (ht t)).
  assert (Mk : sumn (fun d => Rabs (q d * key_used nm sc (kr d))) (g_D g)
               <= (1 + lg_rk nm) * Km + lg_ek nm * Sq).
  { apply Rle_trans with (sumn (fun d => (1 + lg_rk nm) * Rabs (q d * lg_kx nm sc (kr d))
                                         + lg_ek nm * Rabs (q d)) (g_D g)).
    - apply sumn_le. intros d _. rewrite !Rabs_mult.
      pose proof (key_err nm sc (kr d)). pose proof (Rabs_pos (q d)).
      assert (Rabs (key_used nm sc (kr d)) <= (1 + lg_rk nm) * Rabs (lg_kx nm sc (kr d)) + lg_ek nm).
      { replace (key_used nm sc (kr d)) with ((key_used nm sc (kr d) - lg_kx nm sc (kr d)) + lg_kx nm sc (kr d)) by ring.
        eapply Rle_trans; [apply Rabs_triang|]. lra. }
      assert (Rabs (q d) * Rabs (key_used nm sc (kr d))
              <= Rabs (q d) * ((1 + lg_rk nm) * Rabs (lg_kx nm sc (kr d)) + lg_ek nm))
        by (apply Rmult_le_compat_l; lra).
      lra.
    - rewrite sumn_plus, !sumn_scal.
      assert ((1 + lg_rk nm) * sumn (fun d => Rabs (q d * lg_kx nm sc (kr d))) (g_D g) <= (1 + lg_rk nm) * Km)
        by (apply Rmult_le_compat_l; lra).
      assert (lg_ek nm * sumn (fun d => Rabs (q d)) (g_D g) <= lg_ek nm * Sq)
        by (apply Rmult_le_compat_l; lra).
      lra. }
  eapply Rle_trans; [|exact Hpre].
  assert (0 <= sumn (fun d => Rabs (q d * key_used nm sc (kr d))) (g_D g))
    by (apply sumn_nonneg; intros; apply Rabs_pos).
  assert (0 <= INR (g_D g) * eta) by (apply Rmult_le_pos; [apply pos_INR|lra]).
  apply Rmult_le_compat; lra.
Qed.
