(** The floating-point model every other file uses: IEEE binary32 as Flocq's FLT format
    (24-bit significand, emin = -149, so subnormals are included), round to nearest even,
    with the underflow term of Higham's Thm 2.2 (as LAProof states it):
      rnd x = x (1 + d) + e,   |d| <= u = 2^-24,   |e| <= eta = 2^-150,   d e = 0.
    No result is assumed normal. Sums of two floats round with no absolute term (a tiny sum
    of floats is exact), a scaling of a float by a power of two rounds with no relative
    term, and the output formats (f16, bf16; f32 is the identity) are modelled the same way.
    FLT has no largest exponent: it is IEEE binary32 while no result overflows, which is
    where the kernels' rescue paths and the theorem's preconditions come in (Kernel.v). *)
From Coq Require Import Reals Lra Lia.
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
(** Half the subnormal spacing of binary32, 2^-150: the absolute error of any rounding. *)
Definition eta : R := bpow radix2 (-150).
(** The largest finite binary32 value, (2 - 2^-23) 2^127. *)
Definition flt_max : R := (2 - bpow radix2 (-23)) * bpow radix2 127.

Lemma u_value : u = / 16777216.
Proof. unfold u, u_ro, prec. simpl. unfold Z.pow_pos. simpl. field. Qed.
Lemma u_pos : 0 <= u. Proof. apply u_ro_pos. Qed.
Lemma u_small : u <= / 16777216. Proof. rewrite u_value. lra. Qed.
Lemma eta_pos : 0 <= eta. Proof. apply bpow_ge_0. Qed.
Lemma eta_half : eta = / 2 * bpow radix2 emin.
Proof.
  unfold eta, emin. change (-150)%Z with (-1 + -149)%Z. rewrite bpow_plus.
  f_equal.
Qed.

Lemma fmtb_rnd : forall x, fmtb (rnd x).
Proof. intros x. apply generic_format_round; auto with typeclass_instances. Qed.

Lemma rnd_generic : forall x, fmtb x -> rnd x = x.
Proof. intros x H. unfold rnd. apply round_generic; auto with typeclass_instances. Qed.

Lemma fmtb_0 : fmtb 0. Proof. apply generic_format_0. Qed.

Lemma rnd_0 : rnd 0 = 0.
Proof. unfold rnd. apply round_0; auto with typeclass_instances. Qed.

Lemma rnd_le : forall x y, x <= y -> rnd x <= rnd y.
Proof. intros x y H. unfold rnd. apply round_le; auto with typeclass_instances. Qed.

Lemma rnd_nonneg : forall x, 0 <= x -> 0 <= rnd x.
Proof. intros x H. rewrite <- rnd_0. now apply rnd_le. Qed.

(** * The rounding model with its underflow term *)

Lemma rnd_err : forall x, exists d e,
  Rabs d <= u /\ Rabs e <= eta /\ d * e = 0 /\ rnd x = x * (1 + d) + e.
Proof.
  intros x.
  destruct (error_N_FLT radix2 emin prec prec_pos (fun z => negb (Z.even z)) x)
    as [d [e [Hd [He [Hde E]]]]].
  exists d, e. split; [unfold u, u_ro; exact Hd|].
  split; [rewrite eta_half; exact He|]. split; [exact Hde|exact E].
Qed.

Lemma rnd_abs : forall x, Rabs (rnd x - x) <= u * Rabs x + eta.
Proof.
  intros x. destruct (rnd_err x) as [d [e [Hd [He [_ E]]]]]. rewrite E.
  replace (x * (1 + d) + e - x) with (d * x + e) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult.
  pose proof (Rabs_pos x). pose proof (Rabs_pos d).
  assert (Rabs d * Rabs x <= u * Rabs x) by (apply Rmult_le_compat_r; lra). lra.
Qed.

(** Either relative or absolute (d e = 0): for c <> 0 the error is relative with
    max(u, eta / |c|). Used for the logit scale, a launch constant. *)
Definition uc (c : R) : R := Rmax u (eta / Rabs c).

Lemma rnd_rel_uc : forall c, Rabs (rnd c - c) <= uc c * Rabs c.
Proof.
  intros c. destruct (Req_dec c 0) as [->|Nc].
  { rewrite rnd_0. replace (0 - 0) with 0 by ring. rewrite Rabs_R0. lra. }
  assert (Pc : 0 < Rabs c) by (apply Rabs_pos_lt; exact Nc).
  destruct (rnd_err c) as [d [e [Hd [He [Hde E]]]]]. rewrite E.
  replace (c * (1 + d) + e - c) with (d * c + e) by ring.
  unfold uc. destruct (Rmult_integral _ _ Hde) as [-> | ->].
  - rewrite Rmult_0_l, Rplus_0_l.
    apply Rle_trans with (eta / Rabs c * Rabs c).
    + unfold Rdiv. rewrite Rmult_assoc, Rinv_l by lra. lra.
    + apply Rmult_le_compat_r; [lra|apply Rmax_r].
  - rewrite Rplus_0_r, Rabs_mult. apply Rmult_le_compat_r; [lra|].
    eapply Rle_trans; [exact Hd|apply Rmax_l].
Qed.

Lemma uc_ge_u : forall c, u <= uc c.
Proof. intros c. apply Rmax_l. Qed.

(** A sum of two floats rounds with no absolute term. *)
Lemma rnd_plus : forall x y, fmtb x -> fmtb y ->
  exists d, Rabs d <= u /\ rnd (x + y) = (x + y) * (1 + d).
Proof.
  intros x y Fx Fy.
  destruct (FLT_plus_error_N_ex radix2 emin prec
              (fun z => negb (Z.even z)) x y Fx Fy) as [d [Hd E]].
  exists d. split; [|exact E]. eapply Rle_trans; [exact Hd|apply u_rod1pu_ro_le_u_ro].
Qed.

Lemma fmtb_opp : forall x, fmtb x -> fmtb (- x).
Proof. intros x H. now apply generic_format_opp. Qed.

Lemma rnd_minus : forall x y, fmtb x -> fmtb y ->
  exists d, Rabs d <= u /\ rnd (x - y) = (x - y) * (1 + d).
Proof. intros x y Fx Fy. apply rnd_plus; auto. now apply fmtb_opp. Qed.

(** * Scaling by powers of two (the rescue paths' 2^-64 and 2^64) *)

Lemma fmtb_FLT : forall x, fmtb x <-> FLT_format radix2 emin prec x.
Proof.
  intros x. split; intros H.
  - apply FLT_format_generic; [exact prec_gt_0_inst|exact H].
  - apply generic_format_FLT. exact H.
Qed.

(** A float times 2^k (k >= 0) is a float: exact. *)
Lemma rnd_scale_up : forall f k, fmtb f -> (0 <= k)%Z ->
  rnd (f * bpow radix2 k) = f * bpow radix2 k.
Proof.
  intros f k Ff Hk. apply rnd_generic. apply fmtb_FLT.
  apply fmtb_FLT in Ff. destruct Ff as [[m e] -> Hm He].
  exists (Float radix2 m (e + k)); simpl in *; [|exact Hm|lia].
  unfold F2R. simpl. rewrite bpow_plus. ring.
Qed.

(** A float times 2^-k (k >= 0) is exact unless it lands below the normal range, where
    the error is at most half the subnormal spacing: no relative term. *)
Lemma rnd_scale_down : forall f k, fmtb f -> (0 <= k)%Z ->
  Rabs (rnd (f * bpow radix2 (- k)) - f * bpow radix2 (- k)) <= eta.
Proof.
  intros f k Ff Hk. set (x := f * bpow radix2 (- k)).
  destruct (Rlt_or_le (Rabs x) (bpow radix2 (emin + prec))) as [Sm|Bg].
  - eapply Rle_trans; [apply (error_le_half_ulp radix2 fmt (fun z => negb (Z.even z)) x)|].
    rewrite ulp_FLT_small; [rewrite eta_half; lra|exact prec_gt_0_inst|exact Sm].
  - apply fmtb_FLT in Ff. destruct Ff as [[m e] Ef Hm He]. simpl in Hm, He.
    assert (Hx : x = F2R (Float radix2 m (e - k))).
    { unfold x. rewrite Ef. unfold F2R. simpl. unfold Zminus. rewrite bpow_plus. ring. }
    assert (Hek : (emin <= e - k)%Z).
    { destruct (Z_lt_le_dec (e - k) emin) as [L|L]; [|exact L]. exfalso.
      assert (Rabs x < bpow radix2 (prec + (e - k))).
      { rewrite Hx, <- F2R_Zabs. unfold F2R. cbn [Fnum Fexp]. rewrite bpow_plus.
        apply Rmult_lt_compat_r; [apply bpow_gt_0|].
        rewrite <- IZR_Zpower by (unfold prec; lia). apply IZR_lt. exact Hm. }
      assert (bpow radix2 (prec + (e - k)) <= bpow radix2 (emin + prec))
        by (apply bpow_le; lia).
      lra. }
    rewrite rnd_generic.
    + replace (x - x) with 0 by ring. rewrite Rabs_R0. apply eta_pos.
    + apply fmtb_FLT. rewrite Hx. now exists (Float radix2 m (e - k)).
Qed.

(** saturate (attention_kernel.cuh): clamps to [-flt_max, flt_max]; moves toward any exact
    value inside that range. *)
Definition saturate (x : R) : R :=
  if Rlt_dec flt_max x then flt_max else if Rlt_dec x (- flt_max) then - flt_max else x.

Lemma saturate_closer : forall x y, Rabs y <= flt_max ->
  Rabs (saturate x - y) <= Rabs (x - y).
Proof.
  intros x y Hy. apply Rabs_le_inv in Hy. unfold saturate.
  destruct (Rlt_dec flt_max x); [|destruct (Rlt_dec x (- flt_max))]; try lra.
  - rewrite !Rabs_pos_eq by lra. lra.
  - rewrite !Rabs_left1 by lra. lra.
Qed.

Lemma flt_max_pos : 0 < flt_max.
Proof.
  unfold flt_max. apply Rmult_lt_0_compat; [|apply bpow_gt_0].
  assert (bpow radix2 (-23) <= 1) by (apply (bpow_le radix2 (-23) 0); lia).
  simpl in *. lra.
Qed.

(** * Output formats: f32 (nothing rounded), f16, bf16 (round to nearest even) *)

Inductive sfmt := F32 | F16 | BF16.

Definition s_prec (s : sfmt) : Z := match s with F32 => 24 | F16 => 11 | BF16 => 8 end.
Definition s_emin (s : sfmt) : Z := match s with F32 => -149 | F16 => -24 | BF16 => -133 end.

(** The kernels' from_float (and round_to<scalar_t>, from_float then to_float) on a float. *)
Definition cvt (s : sfmt) (x : R) : R :=
  match s with
  | F32 => x
  | _ => round radix2 (FLT_exp (s_emin s) (s_prec s)) ZnearestE x
  end.

(** Unit roundoff and half subnormal spacing of the output format (0 for f32). *)
Definition us (s : sfmt) : R :=
  match s with F32 => 0 | F16 => bpow radix2 (-11) | BF16 => bpow radix2 (-8) end.
Definition etas (s : sfmt) : R :=
  match s with F32 => 0 | F16 => bpow radix2 (-25) | BF16 => bpow radix2 (-134) end.

Lemma us_nonneg : forall s, 0 <= us s.
Proof. intros []; simpl; try lra; apply bpow_ge_0. Qed.
Lemma etas_nonneg : forall s, 0 <= etas s.
Proof. intros []; simpl; try lra; apply bpow_ge_0. Qed.
Lemma us_small : forall s, us s <= / 256.
Proof.
  intros []; unfold us; [lra| |].
  - apply Rle_trans with (bpow radix2 (-8)); [apply bpow_le; lia|]. simpl. lra.
  - simpl. lra.
Qed.

Lemma cvt_err : forall s x, exists d e,
  Rabs d <= us s /\ Rabs e <= etas s /\ cvt s x = x * (1 + d) + e.
Proof.
  intros s x. destruct s.
  - exists 0, 0. simpl. rewrite Rabs_R0. repeat split; lra.
  - assert (P : (0 < 11)%Z) by reflexivity.
    destruct (error_N_FLT radix2 (-24) 11 P (fun z => negb (Z.even z)) x)
      as [d [e [Hd [He [_ E]]]]].
    exists d, e. simpl. split; [|split; [|exact E]].
    + eapply Rle_trans; [exact Hd|]. simpl. lra.
    + eapply Rle_trans; [exact He|]. simpl. unfold Z.pow_pos. simpl. lra.
  - assert (P : (0 < 8)%Z) by reflexivity.
    destruct (error_N_FLT radix2 (-133) 8 P (fun z => negb (Z.even z)) x)
      as [d [e [Hd [He [_ E]]]]].
    exists d, e. simpl. split; [|split; [|exact E]].
    + eapply Rle_trans; [exact Hd|]. simpl. lra.
    + eapply Rle_trans; [exact He|]. right.
      replace (bpow radix2 (-134)) with (bpow radix2 (-1) * bpow radix2 (-133))
        by (rewrite <- bpow_plus; reflexivity).
      f_equal. simpl. lra.
Qed.

Lemma cvt_abs : forall s x, Rabs (cvt s x - x) <= us s * Rabs x + etas s.
Proof.
  intros s x. destruct (cvt_err s x) as [d [e [Hd [He E]]]]. rewrite E.
  replace (x * (1 + d) + e - x) with (d * x + e) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult.
  pose proof (Rabs_pos x).
  assert (Rabs d * Rabs x <= us s * Rabs x) by (apply Rmult_le_compat_r; lra). lra.
Qed.

Lemma cvt_idem : forall s x, cvt s (cvt s x) = cvt s x.
Proof.
  assert (G : forall em pr, (0 < pr)%Z -> forall x,
    round radix2 (FLT_exp em pr) ZnearestE (round radix2 (FLT_exp em pr) ZnearestE x)
    = round radix2 (FLT_exp em pr) ZnearestE x).
  { intros em pr P x. assert (PP : Prec_gt_0 pr) by exact P.
    apply round_generic; auto with typeclass_instances.
    apply generic_format_round; auto with typeclass_instances. }
  intros [] x; simpl; [reflexivity|apply G; reflexivity|apply G; reflexivity].
Qed.

Lemma cvt_nonneg : forall s x, 0 <= x -> 0 <= cvt s x.
Proof.
  assert (G : forall em pr, (0 < pr)%Z -> forall x, 0 <= x ->
    0 <= round radix2 (FLT_exp em pr) ZnearestE x).
  { intros em pr P x H. assert (PP : Prec_gt_0 pr) by exact P.
    rewrite <- (round_0 radix2 (FLT_exp em pr) ZnearestE).
    apply round_le; auto with typeclass_instances. }
  intros [] x H; simpl; [lra|apply G; auto; reflexivity|apply G; auto; reflexivity].
Qed.

(** An f16 or bf16 value is a binary32 float. *)
Lemma fmtb_cvt : forall s x, fmtb x -> fmtb (cvt s x).
Proof.
  assert (G : forall em pr, (0 < pr <= prec)%Z -> (emin <= em)%Z -> forall x,
    fmtb (round radix2 (FLT_exp em pr) ZnearestE x)).
  { intros em pr P E x. assert (PP : Prec_gt_0 pr) by (unfold Prec_gt_0; lia).
    assert (F : generic_format radix2 (FLT_exp em pr)
                  (round radix2 (FLT_exp em pr) ZnearestE x))
      by (apply generic_format_round; auto with typeclass_instances).
    destruct (FLT_format_generic radix2 em pr _ F) as [[m e] Ef Hm He].
    apply fmtb_FLT. exists (Float radix2 m e); [exact Ef| |simpl in *; lia].
    simpl in *. eapply Z.lt_le_trans; [exact Hm|].
    change (Z.pow_pos 2 24) with (2 ^ 24)%Z. apply Z.pow_le_mono_r; unfold prec in P; lia. }
  intros [] x Fx; simpl; [exact Fx|apply G; unfold prec, emin; lia|apply G; unfold prec, emin; lia].
Qed.
