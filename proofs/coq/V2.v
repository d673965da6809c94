(** paged_attention_v2 with P >= 2 partitions: each partition's state from the attention
    kernel, then the reduce (WeightedSum, LseRound.ws_fold), fast or rare path, then the
    output's rounding. *)
From Coq Require Import Bool Reals List Lra Lia.
Import ListNotations.
From Flocq Require Import Core.
From PagedAttn Require Import Fp Sums Err LseRound Compose Model Logit Weights Part PartK Bound
  Kernel Row Tokens V1.
Open Scope R_scope.

(** * The reduce over a list built from the partitions *)

Lemma csum_app : forall f fe M l1 l2, csum f fe M (l1 ++ l2) = csum f fe M l1 + csum f fe M l2.
Proof. intros f fe M l1 l2. induction l1 as [|a l IH]; simpl; [ring|]. rewrite IH. ring. Qed.

Lemma csum_seq : forall f fe M (F : nat -> st3) P,
  csum f fe M (map F (seq 0 P)) = sumn (fun p => ws_weight fe M (F p) * f (F p)) P.
Proof.
  intros f fe M F P. induction P as [|P IH]; [reflexivity|].
  rewrite seq_S, map_app, csum_app, IH. simpl. ring.
Qed.

Lemma lmaxst_props : forall l m0,
  m0 <= lmaxst l m0 /\ (forall a, In a l -> mm a <= lmaxst l m0) /\
  (lmaxst l m0 = m0 \/ exists a, In a l /\ lmaxst l m0 = mm a).
Proof.
  induction l as [|a l IH]; intros m0; simpl.
  - split; [lra|]. split; [tauto|left; reflexivity].
  - destruct (IH (Rmax m0 (mm a))) as [A [B C]].
    split; [eapply Rle_trans; [apply Rmax_l|exact A]|].
    split.
    + intros b [<-|Hb]; [eapply Rle_trans; [apply Rmax_r|exact A]|apply B, Hb].
    + destruct C as [C|[b [Hb C]]].
      * destruct (Rle_dec m0 (mm a)) as [H|H].
        -- right. exists a. split; [left; reflexivity|]. rewrite C. unfold Rmax. destruct (Rle_dec m0 (mm a)); [reflexivity|contradiction].
        -- left. rewrite C. unfold Rmax. destruct (Rle_dec m0 (mm a)); [contradiction|reflexivity].
      * right. exists b. split; [right; exact Hb|exact C].
Qed.

Lemma fmtb_flt_max : fmtb flt_max.
Proof.
  apply fmtb_FLT. apply (FLT_spec _ _ _ _ (Float radix2 16777215 104)).
  - unfold flt_max, F2R. cbn [Fnum Fexp].
    replace (bpow radix2 127) with (bpow radix2 23 * bpow radix2 104) by (rewrite <- bpow_plus; reflexivity).
    change (bpow radix2 (-23)) with (/ bpow radix2 23).
    assert (E : bpow radix2 23 = 8388608) by (simpl; unfold Z.pow_pos; simpl; lra).
    rewrite E. assert (0 < bpow radix2 104) by apply bpow_gt_0. field.
  - simpl. unfold prec. reflexivity.
  - simpl. unfold emin. lia.
Qed.

Lemma saturate_fmtb : forall x, fmtb x -> fmtb (saturate x).
Proof.
  intros x F. unfold saturate. destruct (Rlt_dec flt_max x); [apply fmtb_flt_max|].
  destruct (Rlt_dec x (- flt_max)); [apply fmtb_opp, fmtb_flt_max|exact F].
Qed.

(** A partition result after one more rounding to the scalar type (vLLM's partials). *)
Lemma partres_cvt : forall sc o s L e v aN bN eN th ze,
  PartRes o s L e v aN bN eN th ze ->
  PartRes (cvt sc o) s L e v aN bN eN ((1 + th) * (1 + us sc) - 1) (ze * (1 + us sc) + etas sc).
Proof.
  intros sc o s L e v aN bN eN th ze [N [t [z [HN [Eo [Ht Hz]]]]]].
  destruct (cvt_err sc o) as [d [e1 [Hd [He1 E]]]].
  exists N, ((1 + t) * (1 + d) - 1), (z * (1 + d) + e1). split; [exact HN|]. split; [|split].
  - rewrite E, Eo. ring.
  - apply prod_err; assumption.
  - eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult.
    pose proof (us_nonneg sc).
    assert (Rabs (1 + d) <= 1 + us sc) by (apply Rabs_le; apply Rabs_le_inv in Hd; lra).
    assert (Rabs z * Rabs (1 + d) <= ze * (1 + us sc)) by (apply Rmult_le_compat; auto using Rabs_pos).
    lra.
Qed.

(** A partition result plus an absolute shift. *)
Lemma partres_shift : forall o s L e v aN bN eN th ze xi zx,
  PartRes o s L e v aN bN eN th ze -> Rabs xi <= zx ->
  PartRes (o + xi) s L e v aN bN eN th (ze + zx).
Proof.
  intros o s L e v aN bN eN th ze xi zx [N [t [z [HN [Eo [Ht Hz]]]]]] Hxi.
  exists N, t, (z + xi). split; [exact HN|]. split; [rewrite Eo; ring|]. split; [exact Ht|].
  eapply Rle_trans; [apply Rabs_triang|]. lra.
Qed.

Section V2.
Variables (c : kcfg) (rw : krow) (el : kel).
Variables (q : nat -> R) (kr : nat -> nat -> nat -> R) (slope : R) (pos : nat -> nat -> R).
Variables (vr : nat -> nat -> R) (P : nat) (Lp : nat -> nat) (xm : R) (fe : R -> R).
Variables (rare : nat -> bool) (rrare : bool).

Notation g := (k_g c).
Notation nm := (k_nm c).
Notation vs := (k_vs c).

Hypothesis Hmags : mags_ok c rw el q kr slope pos vr P Lp xm.
Hypothesis HP2 : (2 <= P)%nat.
Hypothesis HLp : forall p, (p < P)%nat -> (1 <= Lp p)%nat.
Hypothesis HLb : forall p, (p < P)%nat -> (Lp p <= r_L rw)%nat.
Hypothesis Hg : geom_ok g.
Hypothesis Hfe : exp_ok fe (b_alpha c) (b_beta c) eta_e.
Hypothesis Hok : bound_ok c rw.
Hypothesis Fvr : forall p j, (p < P)%nat -> (j < Lp p)%nat -> fmtb (vr p j).
Hypothesis Hv2 : k_v2 c = true.
Hypothesis HPr : r_P rw = P.
Hypothesis Hrare : forall p, (p < P)%nat -> rare p = true ->
  pv_flag g (Lp p) (probs g nm (Lp p) (ee c q kr slope pos Lp fe p)) (b_Vk c rw).

Definition st (p : nat) : st3 :=
  state_of g nm vs fe (Lp p) (Row.xh c q kr slope pos p) (vr p) (rare p).
Definition sts : list st3 := map st (seq 0 P).
Definition Mh : R := lmaxst sts (mm (hd (0, 0, 0) sts)).
Definition wh (p : nat) : R := ws_weight fe Mh (st p).
Definition Wv2 (p j : nat) : R := wh p / sh c q kr slope pos Lp fe p * ee c q kr slope pos Lp fe p j.

Lemma st_mm : forall p, mm (st p) = mh c q kr slope pos Lp p.
Proof. reflexivity. Qed.
Lemma st_ss : forall p, ss (st p) = sh c q kr slope pos Lp fe p.
Proof. reflexivity. Qed.
Lemma st_oo : forall p, oo (st p) =
  partial g nm vs (Lp p) (ee c q kr slope pos Lp fe p) (vr p) (rare p).
Proof. reflexivity. Qed.

Lemma HP1 : (1 <= P)%nat. Proof. lia. Qed.

Lemma Rabs_mult_pos_l : forall a b, 0 <= a -> Rabs (a * b) = a * Rabs b.
Proof. intros a b H. rewrite Rabs_mult, Rabs_pos_eq by exact H. reflexivity. Qed.

Lemma Mh_props : (forall p, (p < P)%nat -> mh c q kr slope pos Lp p <= Mh) /\
                 (exists p, (p < P)%nat /\ Mh = mh c q kr slope pos Lp p).
Proof.
  destruct (lmaxst_props sts (mm (hd (0, 0, 0) sts))) as [A [B C]]. fold Mh in A, B, C.
  assert (Hhd : mm (hd (0, 0, 0) sts) = mh c q kr slope pos Lp O).
  { unfold sts. destruct P as [|P']; [lia|]. simpl. reflexivity. }
  split.
  - intros p Hp. rewrite <- st_mm. apply B. unfold sts. apply in_map_iff. exists p. split; [reflexivity|].
    apply in_seq. lia.
  - destruct C as [C|[a [Ha C]]].
    + exists O. split; [lia|]. rewrite C, Hhd. reflexivity.
    + unfold sts in Ha. apply in_map_iff in Ha. destruct Ha as [p [<- Hp]]. apply in_seq in Hp.
      exists p. split; [lia|]. exact C.
Qed.

Lemma mh_le_Mh : forall p, (p < P)%nat -> mh c q kr slope pos Lp p <= Mh.
Proof. apply Mh_props. Qed.
Lemma Mh_att : exists p, (p < P)%nat /\ Mh = mh c q kr slope pos Lp p.
Proof. apply Mh_props. Qed.
Lemma Mh_fmtb : fmtb Mh.
Proof. destruct Mh_att as [p [Hp ->]]. apply (mh_fmtb c q kr slope pos P Lp HLp p Hp). Qed.

Lemma PEe' : 0 <= eta_e. Proof. unfold eta_e. apply bpow_ge_0. Qed.

(** The partition weights' exp argument and value. *)
Lemma tp_props : forall p, (p < P)%nat ->
  rnd (mh c q kr slope pos Lp p - Mh) <= 0 /\
  Rabs (rnd (mh c q kr slope pos Lp p - Mh)) <= (1 + u) * b_tmax c rw.
Proof.
  intros p Hp. pose proof (mh_le_Mh p Hp) as Hle.
  destruct (exp_rnd_sub _ _ (mh_fmtb c q kr slope pos P Lp HLp p Hp) Mh_fmtb Hle) as [d [Hd [E Ht]]].
  split; [exact Ht|]. rewrite E, Rabs_mult, (Rabs_sub_le _ _ Hle).
  destruct (pmax_att (Lp p) (Row.xh c q kr slope pos p) (HLp p Hp)) as [j [Hj Ej]].
  destruct (t_bounds c rw el q kr slope pos vr P Lp xm Hmags HLp Hg Hok Mh mh_le_Mh Mh_att p j Hp Hj)
    as [_ [T1 _]].
  unfold mh in Hle |- *. rewrite Ej in *. pose proof u_pos.
  assert (Rabs (1 + d) <= 1 + u) by (apply Rabs_le; apply Rabs_le_inv in Hd; lra).
  assert ((Mh - Row.xh c q kr slope pos p j) * Rabs (1 + d) <= b_tmax c rw * (1 + u))
    by (apply Rmult_le_compat; try lra; apply Rabs_pos).
  lra.
Qed.

Lemma wh_props : forall p, (p < P)%nat ->
  0 <= wh p /\ wh p / sh c q kr slope pos Lp fe p <= b_lam c rw.
Proof.
  intros p Hp. destruct (tp_props p Hp) as [T0 T1].
  destruct (sh_props c rw el q kr slope pos vr P Lp xm fe Hmags HP1 HLp HLb Hg Hfe Hok p Hp) as [_ [S2 [S3 _]]].
  destruct (Hfe _ T0) as [_ [Pf _]].
  pose proof (fe_le fe (b_alpha c) (b_beta c) eta_e (b_tmax c rw) Hfe (PAl c rw Hok) (PBe c rw Hok) PEe' _ T0 T1) as Fl.
  unfold wh, ws_weight. rewrite st_ss, st_mm. set (sh0 := sh c q kr slope pos Lp fe p) in *.
  set (E := fe (rnd (mh c q kr slope pos Lp p - Mh))) in *.
  split; [apply rnd_nonneg; nra|].
  pose proof (rnd_abs (sh0 * E)) as R. apply Rabs_le_inv in R.
  rewrite Rabs_pos_eq in R by nra.
  pose proof u_pos. pose proof eta_pos. pose proof (smin_pos c rw Hok) as Psm.
  unfold b_lam, Zlam, b_em. fold (b_em c rw) in Fl |- *.
  apply (Rmult_le_reg_r sh0); [lra|]. unfold Rdiv. rewrite Rmult_assoc, Rinv_l, Rmult_1_r by lra.
  assert (sh0 * E * (1 + u) <= sh0 * ((1 + b_em c rw + eta_e) * (1 + u))).
  { rewrite Rmult_assoc. apply Rmult_le_compat_l; [lra|]. apply Rmult_le_compat_r; lra. }
  assert (eta <= eta / b_smin c rw * sh0).
  { unfold Rdiv. rewrite Rmult_assoc. rewrite <- (Rmult_1_r eta) at 1. apply Rmult_le_compat_l; [lra|].
    apply (Rmult_le_reg_l (b_smin c rw)); [lra|]. rewrite <- Rmult_assoc, Rinv_r, Rmult_1_l, Rmult_1_r by lra. lra. }
  assert (((1 + b_em c rw) * (1 + u) + (eta_e * (1 + u) + eta / b_smin c rw)) * sh0
          = sh0 * ((1 + b_em c rw + eta_e) * (1 + u)) + eta / b_smin c rw * sh0) by ring.
  lra.
Qed.

(** Each token's weight in the reduce, against exp(x - M). *)
Lemma Wv2_bound : forall p j, (p < P)%nat -> (j < Lp p)%nat ->
  0 <= Wv2 p j /\
  Rabs (Wv2 p j - exp (Row.xx c q kr slope pos p j - Mh))
  <= TT c rw q kr slope pos xm p j * exp (Row.xx c q kr slope pos p j - Mh) + b_Z c rw.
Proof.
  intros p j Hp Hj.
  destruct (ee_props c rw el q kr slope pos vr P Lp xm fe Hmags HP1 HLp Hg Hfe Hok p Hp) as [E1 _].
  destruct (sh_props c rw el q kr slope pos vr P Lp xm fe Hmags HP1 HLp HLb Hg Hfe Hok p Hp) as [_ [S2 [S3 _]]].
  destruct (E1 j Hj) as [_ [Pe [_ Eej]]].
  destruct (wh_props p Hp) as [Pw _].
  split.
  { unfold Wv2. apply Rmult_le_pos; [|exact Pe]. apply Rmult_le_pos; [exact Pw|left; apply Rinv_0_lt_compat; lra]. }
  destruct (xh_err c rw el q kr slope pos vr P Lp xm Hmags Hg Hok p j Hp Hj) as [X1 X2].
  destruct (tau_bound c rw el q kr slope pos vr P Lp xm Hmags HLp Hg Hok Mh mh_le_Mh Mh_att p j Hp Hj)
    as [T1 [T2 T3]].
  destruct (t_bounds c rw el q kr slope pos vr P Lp xm Hmags HLp Hg Hok Mh mh_le_Mh Mh_att p j Hp Hj)
    as [_ [Tt _]].
  assert (Hm02 : b_m0 c rw = m0_2 (b_alpha c) (b_beta c) (b_tmax c rw) /\
                 b_m1 c rw = m1_2 (b_alpha c) (b_beta c) (b_tmax c rw))
    by (unfold b_m0, b_m1; rewrite Hv2; split; reflexivity).
  destruct Hm02 as [Em0 Em1]. rewrite Em0, Em1 in T2, T3.
  pose proof (pmax_ge (Lp p) (Row.xh c q kr slope pos p) j Hj) as Hle.
  pose proof (smin_pos c rw Hok) as Psm.
  destruct (weight_v2 fe (b_alpha c) (b_beta c) eta_e (b_tmax c rw) Hfe (PAl c rw Hok) (PBe c rw Hok) PEe'
              (Row.xh c q kr slope pos p j) (Row.xx c q kr slope pos p j) (Xij c rw q kr slope pos p j)
              (mh c q kr slope pos Lp p) Mh (sh c q kr slope pos Lp fe p) (b_smin c rw)
              (b_phm c rw) (b_mum c rw)
              (xh_fmtb c q kr slope pos p j) (mh_fmtb c q kr slope pos P Lp HLp p Hp) Mh_fmtb
              Hle (mh_le_Mh p Hp) Tt Psm S2 X1 T1 T2)
    as [tau [z [Ew [Ht Hz]]]].
  fold (b_kc c rw) in Ht.
  assert (EW : Wv2 p j = exp (Row.xx c q kr slope pos p j - Mh) * (1 + tau) + z).
  { unfold Wv2, wh, ws_weight. rewrite st_ss, st_mm, Eej. exact Ew. }
  assert (HZ : b_Z c rw = Z2 (b_alpha c) (b_beta c) (b_tmax c rw) eta_e (b_smin c rw))
    by (unfold b_Z; rewrite Hv2; reflexivity).
  rewrite EW, HZ.
  apply weight_dev; [apply exp_pos | lra | lra].
Qed.

(** The reduce's input list, scaled on its rare path. *)
Definition lr : list st3 := if rrare then map scale_state sts else sts.
Definition kr64 : R := if rrare then bpow radix2 64 else 1.
Definition oo' (p : nat) : R :=
  if rrare then down64 (oo (st p)) else oo (st p).

Lemma lr_eq : lr = map (fun p => if rrare then scale_state (st p) else st p) (seq 0 P).
Proof. unfold lr, sts. destruct rrare; [rewrite map_map; reflexivity|reflexivity]. Qed.

Lemma lr_length : length lr = P.
Proof. rewrite lr_eq, map_length, seq_length. reflexivity. Qed.

Lemma lr_csum : forall f, csum f fe Mh lr = sumn (fun p => wh p * f (if rrare then scale_state (st p) else st p)) P.
Proof.
  intros f. rewrite lr_eq, csum_seq. apply sumn_ext. intros p _. unfold wh.
  destruct rrare; reflexivity.
Qed.

Lemma lr_ok : ws_ok fe (b_em c rw) eta_e (b_tmax c rw) Mh lr.
Proof.
  rewrite lr_eq. apply Forall_forall. intros a Ha. apply in_map_iff in Ha.
  destruct Ha as [p [<- Hp]]. apply in_seq in Hp. assert (Hp' : (p < P)%nat) by lia.
  assert (E : mm (if rrare then scale_state (st p) else st p) = mh c q kr slope pos Lp p /\
              ss (if rrare then scale_state (st p) else st p) = sh c q kr slope pos Lp fe p)
    by (destruct rrare; split; reflexivity).
  destruct E as [Em Es]. unfold part_ok, input_ok. rewrite Em, Es.
  destruct (sh_props c rw el q kr slope pos vr P Lp xm fe Hmags HP1 HLp HLb Hg Hfe Hok p Hp') as [_ [_ [S3 _]]].
  split; [split; [apply (mh_fmtb c q kr slope pos P Lp HLp p Hp')|lra]|].
  intros _. split; [apply mh_le_Mh, Hp'|]. split.
  - destruct (pmax_att (Lp p) (Row.xh c q kr slope pos p) (HLp p Hp')) as [j [Hj Ej]].
    destruct (t_bounds c rw el q kr slope pos vr P Lp xm Hmags HLp Hg Hok Mh mh_le_Mh Mh_att p j Hp' Hj)
      as [_ [T1 _]].
    unfold mh. rewrite Ej. exact T1.
  - destruct (tp_props p Hp') as [T0 T1]. destruct (Hfe _ T0) as [_ [Pf Hf]].
    split; [exact Pf|]. eapply Rle_trans; [exact Hf|]. apply Rplus_le_compat_r.
    apply Rmult_le_compat_r; [left; apply exp_pos|]. unfold b_em, Emax.
    pose proof (PBe c rw Hok).
    assert (b_beta c * Rabs (rnd (mh c q kr slope pos Lp p - Mh)) <= b_beta c * ((1 + u) * b_tmax c rw))
      by (apply Rmult_le_compat_l; lra).
    lra.
Qed.

(** The stored partials are floats. *)
Lemma o_pre_fmtb : forall p, (p < P)%nat ->
  fmtb (o_pre g nm vs (Lp p) (ee c q kr slope pos Lp fe p) (vr p) (rare p)).
Proof.
  intros p Hp. destruct Hg as [_ [Hnw [_ _]]].
  assert (HBR : g_B g = (2 ^ g_lr g * g_vt g)%nat) by reflexivity.
  assert (HB : (0 < g_B g)%nat).
  { rewrite HBR. destruct Hg as [_ [_ [Hvt _]]]. pose proof (Nat.pow_nonzero 2 (g_lr g)). nia. }
  unfold o_pre. destruct (n_vl nm), (rare p);
    first [apply fmtb_rnd | (unfold up64; apply fmtb_rnd) | (apply cv_fmtb; eapply tree_o_props; eauto)].
Qed.

Lemma partial_fmtb : forall p, (p < P)%nat -> fmtb (oo (st p)).
Proof.
  intros p Hp. rewrite st_oo. pose proof (o_pre_fmtb p Hp) as F.
  unfold partial, part_o, o_fin.
  destruct (n_vl nm), (n_fp8 nm), (rare p); try apply fmtb_rnd; try apply fmtb_cvt;
    try apply saturate_fmtb; try exact F.
Qed.

(** Each partial, as the reduce reads it and scaled back, in the partition form. *)
Lemma q_partres : forall p, (p < P)%nat ->
  PartRes (kr64 * oo' p) (sh c q kr slope pos Lp fe p) (Lp p) (ee c q kr slope pos Lp fe p) (vv c vr p)
    (pc_aN (b_pcP c rw)) (pc_bN (b_pcP c rw)) (pc_eN (b_pcP c rw)) (pc_th (b_pcP c rw))
    (pc_ze (b_pcP c rw) + eta64).
Proof.
  intros p Hp.
  pose proof (part_U_sat c rw el q kr slope pos vr P Lp xm fe Hmags HP1 HLp HLb Hg Hfe Hok Fvr rare Hrare p Hp Hv2) as R.
  assert (R' : PartRes (oo (st p)) (sh c q kr slope pos Lp fe p) (Lp p) (ee c q kr slope pos Lp fe p) (vv c vr p)
    (pc_aN (b_pcP c rw)) (pc_bN (b_pcP c rw)) (pc_eN (b_pcP c rw)) (pc_th (b_pcP c rw)) (pc_ze (b_pcP c rw))).
  { rewrite st_oo. unfold partial, b_pcP. destruct (n_vl nm); simpl; [apply partres_cvt|]; exact R. }
  replace (kr64 * oo' p) with (oo (st p) + (kr64 * oo' p - oo (st p))) by ring.
  apply partres_shift; [exact R'|].
  unfold kr64, oo'. destruct rrare.
  - apply down64_err, partial_fmtb, Hp.
  - replace (1 * oo (st p) - oo (st p)) with 0 by ring. rewrite Rabs_R0. apply eta64_pos.
Qed.

Notation ee' := (ee c q kr slope pos Lp fe).
Notation sh' := (sh c q kr slope pos Lp fe).
Notation vv' := (vv c vr).

Lemma pcP_facts : 0 <= pc_aN (b_pcP c rw) /\ 0 <= pc_bN (b_pcP c rw) /\ 0 <= pc_eN (b_pcP c rw) /\
  pc_aN (b_pcP c rw) = pc_aN (b_pcU c rw) /\ pc_bN (b_pcP c rw) = pc_bN (b_pcU c rw) /\
  pc_eN (b_pcP c rw) = pc_eN (b_pcU c rw).
Proof.
  destruct (pcU_nonneg c rw el q kr slope pos vr P Lp xm Hmags Hok) as [A [B C]].
  unfold b_pcP. destruct (n_vl nm); simpl; repeat split; assumption || reflexivity.
Qed.

(** One partition's contribution to the reduce's numerator, against its tokens. *)
Lemma agg_p : forall p, (p < P)%nat ->
  let lam := wh p / sh' p in
  let X := sumn (fun j => ee' p j * Rabs (vv' p j)) (Lp p) in
  let S := sumn (ee' p) (Lp p) in
  Rabs (wh p * (kr64 * oo' p) - lam * sumn (fun j => ee' p j * vv' p j) (Lp p))
    <= b_a1 c rw * (lam * X) + b_b1 c rw * (lam * S) + (1 + pc_th (b_pcP c rw)) * pc_eN (b_pcP c rw) * lam /\
  Rabs (wh p * (kr64 * oo' p))
    <= (1 + b_a1 c rw) * (lam * X) + b_b1 c rw * (lam * S) + (1 + pc_th (b_pcP c rw)) * pc_eN (b_pcP c rw) * lam.
Proof.
  intros p Hp lam X S.
  destruct (q_partres p Hp) as [N [t [z [HN [Eq [Ht Hz]]]]]].
  destruct (sh_props c rw el q kr slope pos vr P Lp xm fe Hmags HP1 HLp HLb Hg Hfe Hok p Hp) as [S1 [_ [S3 _]]].
  destruct (wh_props p Hp) as [Pw _].
  destruct (ee_props c rw el q kr slope pos vr P Lp xm fe Hmags HP1 HLp Hg Hfe Hok p Hp) as [E1 _].
  destruct pcP_facts as [PaP [PbP [PeP _]]].
  set (aP := pc_aN (b_pcP c rw)) in *. set (bP := pc_bN (b_pcP c rw)) in *.
  set (eP := pc_eN (b_pcP c rw)) in *. set (thP := pc_th (b_pcP c rw)) in *.
  set (zeP := pc_ze (b_pcP c rw)) in *.
  set (Sv := sumn (fun j => ee' p j * vv' p j) (Lp p)).
  assert (PlX : Rabs Sv <= X).
  { unfold Sv, X. eapply Rle_trans; [apply sumn_abs|]. apply sumn_le. intros j Hj.
    rewrite Rabs_mult, (Rabs_pos_eq (ee' p j)) by (apply E1, Hj). lra. }
  assert (PX : 0 <= X) by (pose proof (Rabs_pos Sv); lra).
  assert (PS : 0 <= S) by (apply sumn_nonneg; intros; apply E1; auto).
  assert (Plam : 0 <= lam) by (apply Rmult_le_pos; [exact Pw|left; apply Rinv_0_lt_compat; lra]).
  assert (Pth : 0 <= thP) by (pose proof (Rabs_pos t); lra).
  assert (Pze : 0 <= zeP + eta64) by (pose proof (Rabs_pos z); lra).
  pose proof (g_nonneg (hs g (r_L rw))) as Pgs. fold (b_gs c rw) in Pgs.
  assert (Ewh : wh p = lam * sh' p) by (unfold lam; field; lra).
  assert (Hwh : wh p <= lam * ((1 + b_gs c rw) * S)).
  { rewrite Ewh. apply Rmult_le_compat_l; [exact Plam|]. apply Rabs_le_inv in S1. fold S in S1. lra. }
  assert (E : wh p * (kr64 * oo' p) - lam * Sv
              = lam * ((N - Sv) * (1 + t) + t * Sv) + wh p * z).
  { rewrite Eq, Ewh. field. lra. }
  assert (A : Rabs (wh p * (kr64 * oo' p) - lam * Sv)
              <= b_a1 c rw * (lam * X) + b_b1 c rw * (lam * S) + (1 + thP) * eP * lam).
  { rewrite E. eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult, (Rabs_pos_eq lam), (Rabs_pos_eq (wh p)) by lra.
    assert (B1 : Rabs ((N - Sv) * (1 + t) + t * Sv) <= (aP * X + bP * S + eP) * (1 + thP) + thP * X).
    { eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult.
      assert (Rabs (1 + t) <= 1 + thP) by (apply Rabs_le; apply Rabs_le_inv in Ht; lra).
      assert (Rabs (N - Sv) * Rabs (1 + t) <= (aP * X + bP * S + eP) * (1 + thP))
        by (apply Rmult_le_compat; auto using Rabs_pos).
      assert (Rabs t * Rabs Sv <= thP * X) by (apply Rmult_le_compat; auto using Rabs_pos).
      lra. }
    assert (lam * Rabs ((N - Sv) * (1 + t) + t * Sv) <= lam * ((aP * X + bP * S + eP) * (1 + thP) + thP * X))
      by (apply Rmult_le_compat_l; lra).
    assert (wh p * Rabs z <= lam * ((1 + b_gs c rw) * S) * (zeP + eta64)).
    { apply Rmult_le_compat; auto using Rabs_pos. }
    unfold b_a1, b_b1. fold aP bP thP zeP.
    assert (lam * ((aP * X + bP * S + eP) * (1 + thP) + thP * X) + lam * ((1 + b_gs c rw) * S) * (zeP + eta64)
            = ((1 + thP) * (1 + aP) - 1) * (lam * X) + ((1 + thP) * bP + (zeP + eta64) * (1 + b_gs c rw)) * (lam * S)
              + (1 + thP) * eP * lam) by ring.
    lra. }
  split; [exact A|].
  replace (wh p * (kr64 * oo' p)) with ((wh p * (kr64 * oo' p) - lam * Sv) + lam * Sv) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult, (Rabs_pos_eq lam) by lra.
  assert (lam * Rabs Sv <= lam * X) by (apply Rmult_le_compat_l; lra).
  lra.
Qed.

Lemma sum2_Wv2 : forall f, sum2 P Lp (fun p j => Wv2 p j * f p j)
  = sumn (fun p => wh p / sh' p * sumn (fun j => ee' p j * f p j) (Lp p)) P.
Proof.
  intros f. unfold sum2. apply sumn_ext. intros p _. rewrite <- sumn_scal. apply sumn_ext. intros.
  unfold Wv2. ring.
Qed.

Lemma sum2_Wv2_1 : sum2 P Lp Wv2 = sumn (fun p => wh p / sh' p * sumn (ee' p) (Lp p)) P.
Proof.
  rewrite <- (sum2_ext P Lp (fun p j => Wv2 p j * 1)) by (intros; ring).
  rewrite sum2_Wv2. apply sumn_ext. intros p _. f_equal. apply sumn_ext. intros. ring.
Qed.

(** The reduce's numerator, summed over the partitions. *)
Lemma agg :
  Rabs (sumn (fun p => wh p * (kr64 * oo' p)) P - sum2 P Lp (fun p j => Wv2 p j * vv' p j))
    <= b_a1 c rw * sum2 P Lp (fun p j => Wv2 p j * Rabs (vv' p j)) + b_b1 c rw * sum2 P Lp Wv2 + b_e1 c rw /\
  sumn (fun p => wh p * Rabs (kr64 * oo' p)) P
    <= (1 + b_a1 c rw) * sum2 P Lp (fun p j => Wv2 p j * Rabs (vv' p j)) + b_b1 c rw * sum2 P Lp Wv2 + b_e1 c rw.
Proof.
  set (lam := fun p => wh p / sh' p).
  set (k := (1 + pc_th (b_pcP c rw)) * pc_eN (b_pcP c rw)).
  assert (Hlam : sumn lam P <= INR P * b_lam c rw)
    by (apply sumn_le_max; intros p Hp; exact (proj2 (wh_props p Hp))).
  assert (Pk : 0 <= k).
  { destruct pcP_facts as [_ [_ [PeP _]]].
    destruct (q_partres O ltac:(lia)) as [N [t [z [_ [_ [Ht _]]]]]].
    unfold k. apply Rmult_le_pos; [pose proof (Rabs_pos t); lra|exact PeP]. }
  assert (He1 : k * sumn lam P <= b_e1 c rw).
  { unfold b_e1. fold k. rewrite HPr. replace (k * INR P * b_lam c rw) with (k * (INR P * b_lam c rw)) by ring.
    apply Rmult_le_compat_l; [exact Pk|exact Hlam]. }
  rewrite !sum2_Wv2, sum2_Wv2_1. fold lam.
  split.
  - rewrite <- sumn_minus. eapply Rle_trans; [apply sumn_abs|].
    apply Rle_trans with (sumn (fun p => b_a1 c rw * (lam p * sumn (fun j => ee' p j * Rabs (vv' p j)) (Lp p))
                                        + b_b1 c rw * (lam p * sumn (ee' p) (Lp p)) + k * lam p) P).
    + apply sumn_le. intros p Hp. exact (proj1 (agg_p p Hp)).
    + rewrite !sumn_plus, !sumn_scal. unfold lam in *. lra.
  - apply Rle_trans with (sumn (fun p => (1 + b_a1 c rw) * (lam p * sumn (fun j => ee' p j * Rabs (vv' p j)) (Lp p))
                                        + b_b1 c rw * (lam p * sumn (ee' p) (Lp p)) + k * lam p) P).
    + apply sumn_le. intros p Hp. rewrite <- (Rabs_mult_pos_l (wh p)) by exact (proj1 (wh_props p Hp)).
      exact (proj2 (agg_p p Hp)).
    + rewrite !sumn_plus, !sumn_scal. unfold lam in *. lra.
Qed.

Lemma ws_fold_fst_fmtb : forall M l ta, fmtb (fst ta) -> fmtb (fst (ws_fold fe M l ta)).
Proof.
  intros M l. induction l as [|a l IH]; intros ta F; simpl; [exact F|].
  apply IH. unfold ws_add. destruct (Req_EM_T _ 0); [exact F|apply fmtb_rnd].
Qed.

Definition rr : R * R := ws_fold fe Mh lr (0, 0).

Lemma Pkr : 0 < kr64 /\ kr64 * eta <= eta64.
Proof.
  pose proof eta_pos. unfold kr64. destruct rrare.
  - split; [apply bpow_gt_0|rewrite Rmult_comm, eta64_eq; lra].
  - split; [lra|]. rewrite Rmult_1_l. unfold eta, eta64. apply bpow_le. lia.
Qed.

Lemma b_coefs :
  0 <= b_a1 c rw /\ 0 <= b_b1 c rw /\ 0 <= b_e1 c rw /\ 0 <= b_gP rw /\ 0 <= b_gP1 rw /\ 0 <= b_gs c rw.
Proof.
  destruct pcP_facts as [PaP [PbP [PeP _]]].
  destruct (q_partres O ltac:(lia)) as [N [t [z [_ [_ [Ht Hz]]]]]].
  pose proof (Rabs_pos t). pose proof (Rabs_pos z). pose proof eta64_pos.
  pose proof (g_nonneg (r_P rw)). pose proof (g_nonneg (r_P rw - 1)). pose proof (g_nonneg (hs g (r_L rw))).
  unfold b_a1, b_b1, b_e1, b_gP, b_gP1, b_gs.
  assert (Plam : 0 <= b_lam c rw).
  { destruct (wh_props O ltac:(lia)) as [Pw Hl].
    destruct (sh_props c rw el q kr slope pos vr P Lp xm fe Hmags HP1 HLp HLb Hg Hfe Hok O ltac:(lia)) as [_ [_ [S3 _]]].
    eapply Rle_trans; [|exact Hl]. apply Rmult_le_pos; [exact Pw|left; apply Rinv_0_lt_compat; lra]. }
  repeat split; try lra.
  - assert (0 <= pc_th (b_pcP c rw) * pc_aN (b_pcP c rw)) by (apply Rmult_le_pos; lra). nra.
  - apply Rplus_le_le_0_compat; apply Rmult_le_pos; lra.
  - repeat apply Rmult_le_pos; try lra. apply pos_INR.
Qed.

Lemma red_sums :
  Rabs (kr64 * snd rr - sum2 P Lp (fun p j => Wv2 p j * vv' p j))
    <= b_aN c rw * sum2 P Lp (fun p j => Wv2 p j * Rabs (vv' p j)) + b_bN c rw * sum2 P Lp Wv2 + b_eN c rw /\
  Rabs (fst rr - sum2 P Lp Wv2) <= b_aD c rw * sum2 P Lp Wv2 /\
  b_totmin c rw <= fst rr /\ fmtb (fst rr).
Proof.
  destruct (ws_sums_err fe (b_em c rw) eta_e (b_tmax c rw) Mh lr lr_ok) as [T1 A1].
  fold rr in T1, A1. rewrite lr_length in T1, A1.
  destruct agg as [G1 G2].
  destruct b_coefs as [Pa1 [Pb1 [Pe1 [PgP [PgP1 Pgs]]]]].
  destruct Pkr as [Pk Pke].
  assert (Ecw : cw fe Mh lr = sumn wh P) by (unfold cw; rewrite lr_csum; apply sumn_ext; intros; ring).
  assert (Ecn : kr64 * cn fe Mh lr = sumn (fun p => wh p * (kr64 * oo' p)) P).
  { unfold cn. rewrite lr_csum, <- sumn_scal. apply sumn_ext. intros p _. unfold oo'. destruct rrare; simpl; ring. }
  assert (Eca : kr64 * ca fe Mh lr = sumn (fun p => wh p * Rabs (kr64 * oo' p)) P).
  { unfold ca. rewrite lr_csum, <- sumn_scal. apply sumn_ext. intros p _. unfold oo'.
    rewrite Rabs_mult, (Rabs_pos_eq kr64) by lra. destruct rrare; simpl; ring. }
  set (SWv := sum2 P Lp (fun p j => Wv2 p j * vv' p j)) in *.
  set (SWa := sum2 P Lp (fun p j => Wv2 p j * Rabs (vv' p j))) in *.
  set (SW := sum2 P Lp Wv2) in *.
  try rewrite HPr in *.
  (* the numerator *)
  assert (N1 : Rabs (kr64 * snd rr - kr64 * cn fe Mh lr)
               <= b_gP rw * (kr64 * ca fe Mh lr) + INR P * eta64 * (1 + u) ^ P).
  { replace (kr64 * snd rr - kr64 * cn fe Mh lr) with (kr64 * (snd rr - cn fe Mh lr)) by ring.
    rewrite Rabs_mult, (Rabs_pos_eq kr64) by lra.
    assert (kr64 * Rabs (snd rr - cn fe Mh lr)
            <= kr64 * (((1 + u) ^ P - 1) * ca fe Mh lr + INR P * eta * (1 + u) ^ P))
      by (apply Rmult_le_compat_l; lra).
    pose proof (pow1u_ge1 P). pose proof (pos_INR P).
    assert (kr64 * (INR P * eta * (1 + u) ^ P) <= INR P * eta64 * (1 + u) ^ P).
    { replace (kr64 * (INR P * eta * (1 + u) ^ P)) with (INR P * (kr64 * eta) * (1 + u) ^ P) by ring.
      apply Rmult_le_compat_r; [lra|]. apply Rmult_le_compat_l; lra. }
    unfold b_gP. rewrite HPr. unfold Sums.g. lra. }
  split; [|split; [|split]].
  - rewrite Ecn in N1. rewrite Eca in N1.
    replace (kr64 * snd rr - SWv)
      with ((kr64 * snd rr - sumn (fun p => wh p * (kr64 * oo' p)) P)
            + (sumn (fun p => wh p * (kr64 * oo' p)) P - SWv)) by ring.
    eapply Rle_trans; [apply Rabs_triang|].
    assert (b_gP rw * sumn (fun p => wh p * Rabs (kr64 * oo' p)) P
            <= b_gP rw * ((1 + b_a1 c rw) * SWa + b_b1 c rw * SW + b_e1 c rw))
      by (apply Rmult_le_compat_l; lra).
    unfold b_aN, b_bN, b_eN. rewrite Hv2. rewrite HPr. lra.
  - (* the denominator *)
    assert (Hd : Rabs (sumn wh P - SW) <= b_gs c rw * SW).
    { unfold SW. rewrite sum2_Wv2_1, <- sumn_minus. eapply Rle_trans; [apply sumn_abs|].
      rewrite <- sumn_scal. apply sumn_le. intros p Hp.
      destruct (sh_props c rw el q kr slope pos vr P Lp xm fe Hmags HP1 HLp HLb Hg Hfe Hok p Hp) as [S1 [_ [S3 _]]].
      destruct (wh_props p Hp) as [Pw _].
      assert (Plam : 0 <= wh p / sh' p) by (apply Rmult_le_pos; [exact Pw|left; apply Rinv_0_lt_compat; lra]).
      replace (wh p - wh p / sh' p * sumn (ee' p) (Lp p))
        with (wh p / sh' p * (sh' p - sumn (ee' p) (Lp p))) by (field; lra).
      rewrite Rabs_mult, (Rabs_pos_eq (wh p / sh' p)) by lra.
      replace (b_gs c rw * (wh p / sh' p * sumn (ee' p) (Lp p)))
        with (wh p / sh' p * (b_gs c rw * sumn (ee' p) (Lp p))) by ring.
      apply Rmult_le_compat_l; [exact Plam|exact S1]. }
    rewrite Ecw in T1.
    assert (sumn wh P <= (1 + b_gs c rw) * SW) by (apply Rabs_le_inv in Hd; lra).
    assert (((1 + u) ^ (P - 1) - 1) * sumn wh P <= b_gP1 rw * ((1 + b_gs c rw) * SW)).
    { unfold b_gP1, Sums.g. rewrite HPr. apply Rmult_le_compat_l; [|lra].
      pose proof (pow1u_ge1 (P - 1)). lra. }
    replace (fst rr - SW) with ((fst rr - sumn wh P) + (sumn wh P - SW)) by ring.
    eapply Rle_trans; [apply Rabs_triang|]. unfold b_aD. rewrite Hv2. lra.
  - (* the total is at least totmin *)
    rewrite Ecw in T1. apply Rabs_le_inv in T1.
    destruct Mh_att as [p0 [Hp0 EM]].
    assert (Hw0 : b_smin c rw * b_e0 c * (1 - u) - eta <= wh p0).
    { unfold wh, ws_weight. rewrite st_ss, st_mm, <- EM. replace (Mh - Mh) with 0 by ring. rewrite rnd_0.
      destruct (sh_props c rw el q kr slope pos vr P Lp xm fe Hmags HP1 HLp HLb Hg Hfe Hok p0 Hp0) as [_ [S2 [S3 _]]].
      pose proof (fe_ge0 fe (b_alpha c) (b_beta c) eta_e Hfe (PAl c rw Hok) (PBe c rw Hok) PEe') as F0.
      fold (b_e0 c) in F0.
      destruct Hok as [_ [_ [_ [_ [He0 _]]]]].
      pose proof (smin_pos c rw Hok) as Psm.
      assert (b_smin c rw * b_e0 c <= sh' p0 * fe 0) by (apply Rmult_le_compat; lra).
      pose proof (rnd_abs (sh' p0 * fe 0)) as R. apply Rabs_le_inv in R.
      rewrite Rabs_pos_eq in R by nra. pose proof u_pos. pose proof u_small.
      assert (u * (sh' p0 * fe 0) <= u * (sh' p0 * fe 0)) by lra.
      assert ((b_smin c rw * b_e0 c) * (1 - u) <= (sh' p0 * fe 0) * (1 - u)) by (apply Rmult_le_compat_r; lra).
      lra. }
    assert (Hcw : wh p0 <= sumn wh P) by (apply sumn_ge_term; [exact Hp0|intros; apply wh_props; auto]).
    assert (HgP1 : b_gP1 rw < 1).
    { destruct Hok as [_ [_ [_ [_ [_ [_ [_ [HaD _]]]]]]]]. unfold b_aD in HaD. rewrite Hv2 in HaD.
      pose proof (g_nonneg (hs g (r_L rw))). fold (b_gs c rw) in H. nra. }
    unfold b_totmin. fold (b_gP1 rw).
    assert ((1 - b_gP1 rw) * (b_smin c rw * b_e0 c * (1 - u) - eta) <= (1 - b_gP1 rw) * sumn wh P)
      by (apply Rmult_le_compat_l; lra).
    unfold b_gP1, Sums.g in *. rewrite HPr in *. lra.
  - apply ws_fold_fst_fmtb. apply fmtb_0.
Qed.

Lemma yy_bounds : Rabs (yy c q kr slope pos vr P Lp) <= r_V rw /\ Rabs (yy c q kr slope pos vr P Lp) <= b_Y el.
Proof.
  destruct Hmags as [Hall [_ [_ [_ [_ [_ [HA [_ [_ [_ [_ [HYe _]]]]]]]]]]]].
  assert (Hpa : Rabs (yy c q kr slope pos vr P Lp) <= sum2 P Lp (fun p j => pp c q kr slope pos P Lp p j * Rabs (vv' p j))).
  { unfold yy. eapply Rle_trans; [apply sum2_abs|]. apply sum2_le. intros p j Hp Hj.
    rewrite Rabs_mult, (Rabs_pos_eq (pp c q kr slope pos P Lp p j))
      by (apply (pp_nonneg c rw el q kr slope pos vr P Lp xm Hmags); auto). lra. }
  split.
  - eapply Rle_trans; [exact Hpa|].
    apply Rle_trans with (sum2 P Lp (fun p j => r_V rw * pp c q kr slope pos P Lp p j)).
    + apply sum2_le. intros p j Hp Hj. rewrite (Rmult_comm (r_V rw)).
      apply Rmult_le_compat_l; [apply (pp_nonneg c rw el q kr slope pos vr P Lp xm Hmags); auto|apply (Hall p j Hp Hj)].
    + rewrite sum2_scal, (pp_sum c rw el q kr slope pos vr P Lp xm Hmags). lra.
  - unfold b_Y. apply Rmin_glb; lra.
Qed.

Theorem v2_error :
  Rabs (v2_out g nm vs fe P Lp (Row.xh c q kr slope pos) vr rare rrare - yy c q kr slope pos vr P Lp)
  <= b_total c rw el.
Proof.
  destruct (ok_ab c rw Hok) as [Ha Hb].
  assert (Hok' := Hok).
  destruct Hok as [_ [_ [PV [HVf [He0 [Hgs1 [Hd0 [HaD [_ [Htot _]]]]]]]]]].
  destruct (Htot Hv2) as [Ptot Hvtot].
  destruct red_sums as [HN [HD [Hfst Ffst]]].
  destruct Pkr as [Pk Pke].
  destruct b_coefs as [Pa1 [Pb1 [Pe1 [PgP [PgP1 Pgs]]]]].
  set (SW := sum2 P Lp Wv2) in *.
  set (o := if n_vl nm then rnd (snd rr * inv_eps (fst rr)) else ws_result rr).
  assert (Fo : fmtb o) by (unfold o, ws_result; destruct (n_vl nm); [apply fmtb_rnd|];
                           destruct (Req_EM_T _ 0); [apply fmtb_0|apply fmtb_rnd]).
  set (o32 := kr64 * o).
  assert (Ered : reduce_out nm fe sts rrare = if rrare then saturate o32 else o32).
  { unfold reduce_out. fold Mh. fold lr. fold rr. fold o. unfold o32, kr64.
    destruct rrare; [rewrite up64_eq by exact Fo; rewrite Rmult_comm; reflexivity|ring]. }
  assert (PtotR : 0 < fst rr) by lra.
  assert (HZ : 0 <= b_Z c rw).
  { unfold b_Z. rewrite Hv2. unfold Z2, Zlam. pose proof u_pos. pose proof eta_pos. pose proof PEe'.
    pose proof (smin_pos c rw Hok') as Psm.
    destruct (coefs_nonneg c rw el q kr slope pos vr P Lp xm Hmags Ha Hb) as [_ [_ [_ [_ [_ [_ [PEm _]]]]]]].
    unfold b_em in PEm.
    assert (0 <= eta / b_smin c rw) by (apply Rmult_le_pos; [lra|left; apply Rinv_0_lt_compat; lra]).
    assert (0 <= (1 + Emax (b_alpha c) (b_beta c) (b_tmax c rw)) * (1 + u) * eta_e)
      by (apply Rmult_le_pos; [apply Rmult_le_pos|]; lra).
    assert (0 <= (eta_e * (1 + u) + eta / b_smin c rw) * (1 + Emax (b_alpha c) (b_beta c) (b_tmax c rw) + eta_e))
      by (apply Rmult_le_pos; nra).
    lra. }
  assert (Hcoef : 0 <= b_aN c rw /\ 0 <= b_bN c rw /\ 0 <= b_eN c rw /\ 0 <= b_aD c rw < 1 /\ 0 <= b_th c rw).
  { unfold b_aN, b_bN, b_eN, b_aD, b_th. rewrite Hv2. pose proof u_pos.
    pose proof eta64_pos. pose proof (pow1u_ge1 (r_P rw)). pose proof (pos_INR (r_P rw)).
    assert (0 <= (1 + b_gP rw) * b_a1 c rw) by (apply Rmult_le_pos; lra).
    assert (0 <= INR (r_P rw) * eta64 * (1 + u) ^ r_P rw) by (repeat apply Rmult_le_pos; lra).
    assert (0 <= (1 + b_gP1 rw) * b_gs c rw) by (apply Rmult_le_pos; lra).
    repeat split; try nra.
    - unfold b_aD in HaD. rewrite Hv2 in HaD. lra.
    - destruct (n_vl nm) eqn:Evl; [|lra].
      destruct (Hvtot eq_refl) as [He _]. pose proof (thv_nonneg _ Ptot He). nra. }
  (* the last operation's form *)
  assert (Ho : exists th' ze', o32 = kr64 * snd rr / fst rr * (1 + th') + ze' /\
                 Rabs th' <= b_th c rw /\ Rabs ze' <= b_ze c rw).
  { unfold o32, o, b_th, b_ze. rewrite Hv2. destruct (n_vl nm) eqn:Evl.
    - destruct (Hvtot eq_refl) as [He Hth].
      destruct (inv_eps_err (fst rr) (b_totmin c rw) Ffst Ptot Hfst He) as [ti [e2 [Ei [Hti He2]]]].
      destruct (rnd_err (snd rr * inv_eps (fst rr))) as [d [e [Hd [Hee [_ E]]]]].
      exists ((1 + ti) * (1 + d) - 1), (kr64 * snd rr * e2 * (1 + d) + kr64 * e).
      split; [rewrite E, Ei; field; lra|]. split; [apply prod_err; assumption|].
      (* |kr64 snd rr| <= accm *)
      assert (HWm : SW <= b_lam c rw * INR (r_n rw) * b_emax c rw).
      { destruct Hmags as [_ [_ [_ [_ [_ [_ [_ [_ [_ [_ [_ [_ Hn]]]]]]]]]]]].
        unfold SW. replace (b_lam c rw * INR (r_n rw) * b_emax c rw) with (ntok P Lp * (b_lam c rw * b_emax c rw))
          by (rewrite <- Hn; ring).
        apply sum2_le_max. intros p j Hp Hj. unfold Wv2.
        destruct (wh_props p Hp) as [Pw Hl].
        destruct (ee_props c rw el q kr slope pos vr P Lp xm fe Hmags HP1 HLp Hg Hfe Hok' p Hp) as [E1 _].
        destruct (E1 j Hj) as [_ [Pe [Hem _]]].
        destruct (sh_props c rw el q kr slope pos vr P Lp xm fe Hmags HP1 HLp HLb Hg Hfe Hok' p Hp) as [_ [_ [S3 _]]].
        apply Rmult_le_compat; [apply Rmult_le_pos; [exact Pw|left; apply Rinv_0_lt_compat; lra]|exact Pe|exact Hl|exact Hem]. }
      assert (HSWv : Rabs (sum2 P Lp (fun p j => Wv2 p j * vv' p j)) <= sum2 P Lp (fun p j => Wv2 p j * Rabs (vv' p j))).
      { eapply Rle_trans; [apply sum2_abs|]. apply sum2_le. intros p j Hp Hj.
        rewrite Rabs_mult, (Rabs_pos_eq (Wv2 p j)) by (apply Wv2_bound; auto). lra. }
      assert (HSWa : sum2 P Lp (fun p j => Wv2 p j * Rabs (vv' p j)) <= r_V rw * SW).
      { unfold SW. rewrite <- sum2_scal. apply sum2_le. intros p j Hp Hj.
        destruct Hmags as [Hall _]. rewrite Rmult_comm. apply Rmult_le_compat_r; [apply Wv2_bound; auto|apply (Hall p j Hp Hj)]. }
      assert (PSW : 0 <= SW) by (unfold SW; apply sum2_nonneg; intros; apply Wv2_bound; auto).
      assert (HNb : Rabs (kr64 * snd rr) <= b_accm c rw).
      { unfold b_accm.
        replace (kr64 * snd rr) with ((kr64 * snd rr - sum2 P Lp (fun p j => Wv2 p j * vv' p j))
                                      + sum2 P Lp (fun p j => Wv2 p j * vv' p j)) by ring.
        eapply Rle_trans; [apply Rabs_triang|].
        assert (b_aN c rw * sum2 P Lp (fun p j => Wv2 p j * Rabs (vv' p j)) <= b_aN c rw * (r_V rw * SW))
          by (apply Rmult_le_compat_l; lra).
        assert (((1 + b_aN c rw) * r_V rw + b_bN c rw) * SW
                <= ((1 + b_aN c rw) * r_V rw + b_bN c rw) * (b_lam c rw * INR (r_n rw) * b_emax c rw))
          by (apply Rmult_le_compat_l; [nra|exact HWm]).
        lra. }
      pose proof u_pos. pose proof eta_pos.
      eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult, (Rabs_pos_eq kr64) by lra.
      assert (Rabs (1 + d) <= 1 + u) by (apply Rabs_le; apply Rabs_le_inv in Hd; lra).
      assert (Rabs (kr64 * snd rr) * Rabs e2 * Rabs (1 + d) <= b_accm c rw * eta * (1 + u)).
      { apply Rmult_le_compat; [apply Rmult_le_pos; apply Rabs_pos|apply Rabs_pos| |lra].
        apply Rmult_le_compat; auto using Rabs_pos. }
      rewrite Rabs_mult, (Rabs_pos_eq kr64) in H2 by lra.
      assert (kr64 * Rabs e <= eta64).
      { eapply Rle_trans; [|exact Pke]. apply Rmult_le_compat_l; lra. }
      lra.
    - unfold ws_result. destruct (Req_EM_T (fst rr) 0) as [Z|_]; [lra|].
      destruct (rnd_err (snd rr / fst rr)) as [d [e [Hd [Hee [_ E]]]]].
      exists d, (kr64 * e). split; [rewrite E; field; lra|]. split; [exact Hd|].
      rewrite Rabs_mult, (Rabs_pos_eq kr64) by lra.
      eapply Rle_trans; [|exact Pke]. apply Rmult_le_compat_l; lra. }
  destruct Mh_props as [HMge HMatt].
  pose proof (row_assemble c rw el q kr slope pos vr P Lp xm Hmags Ha Hb Wv2 Mh (kr64 * snd rr) (fst rr) o32
    ltac:(intros p j Hp Hj; apply Wv2_bound; auto)
    ltac:(intros p j Hp Hj; apply Wv2_bound; auto)
    (M_le c rw el q kr slope pos vr P Lp xm Hmags HLp Hg Hok' Mh HMge HMatt)
    HZ Hd0 HN HD Ho Hcoef) as RA.
  destruct yy_bounds as [HyV HyY].
  change (v2_out g nm vs fe P Lp (Row.xh c q kr slope pos) vr rare rrare)
    with (cvt (n_s nm) (reduce_out nm fe sts rrare)).
  rewrite Ered. unfold b_total, b_final.
  apply final_round; [|exact HyY].
  destruct rrare; [|exact RA].
  eapply Rle_trans; [apply saturate_closer|exact RA]. lra.
Qed.

End V2.
