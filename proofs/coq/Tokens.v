(** The tokens of a row as the attention kernel computes them: logits, maxima, weights,
    exp-sums, and each partition's result with the bound's constants (the rare path
    included, or excluded by the bound's precondition). Shared by V1 and V2. *)
From Coq Require Import Bool Reals List Lra Lia.
From Flocq Require Import Core.
From PagedAttn Require Import Fp Sums Err Compose Model Logit Weights Part PartK Bound Kernel Row.
Open Scope R_scope.

Lemma final_round : forall s o y E Y, Rabs (o - y) <= E -> Rabs y <= Y ->
  Rabs (cvt s o - y) <= E + (us s * (Y + E) + etas s).
Proof.
  intros s o y E Y H HY. eapply Rle_trans; [apply cvt_near|].
  pose proof (us_nonneg s).
  assert (us s * Rabs (o - y) <= us s * E) by (apply Rmult_le_compat_l; lra).
  assert (us s * Rabs y <= us s * Y) by (apply Rmult_le_compat_l; lra).
  lra.
Qed.

Section Tok.
Variables (c : kcfg) (rw : krow) (el : kel).
Variables (q : nat -> R) (kr : nat -> nat -> nat -> R) (slope : R) (pos : nat -> nat -> R).
Variables (vr : nat -> nat -> R) (P : nat) (Lp : nat -> nat) (xm : R) (fe : R -> R).

Notation g := (k_g c).
Notation nm := (k_nm c).
Notation xh := (xh c q kr slope pos).
Notation xx := (xx c q kr slope pos).
Notation QQ := (QQ c q kr).
Notation vv := (vv c vr).

Hypothesis Hmags : mags_ok c rw el q kr slope pos vr P Lp xm.
Hypothesis HP : (1 <= P)%nat.
Hypothesis HLp : forall p, (p < P)%nat -> (1 <= Lp p)%nat.
Hypothesis HLb : forall p, (p < P)%nat -> (Lp p <= r_L rw)%nat.
Hypothesis Hg : geom_ok g.
Hypothesis Hfe : exp_ok fe (b_alpha c) (b_beta c) eta_e.
Hypothesis Hok : bound_ok c rw.
Hypothesis Fvr : forall p j, (p < P)%nat -> (j < Lp p)%nat -> fmtb (vr p j).

Lemma ok_ab : 0 <= k_a c /\ 0 <= k_b c.
Proof. destruct Hok as [A [B _]]. split; assumption. Qed.

Lemma PAl : 0 <= b_alpha c.
Proof. unfold b_alpha. pose proof u_pos. pose proof (proj1 ok_ab). nra. Qed.
Lemma PBe : 0 <= b_beta c.
Proof. unfold b_beta. pose proof u_pos. pose proof (proj2 ok_ab). nra. Qed.
Lemma PEe : 0 <= eta_e.
Proof. unfold eta_e. apply bpow_ge_0. Qed.

Definition Xij (p j : nat) : R :=
  b_gdot c * (1 + u) * QQ p j + u * Rabs (xx p j) + b_etaq c rw.

Lemma xh_err : forall p j, (p < P)%nat -> (j < Lp p)%nat ->
  Rabs (xh p j - xx p j) <= Xij p j /\ Xij p j <= b_xi c rw.
Proof.
  intros p j Hp Hj. destruct Hmags as [Hall [_ [HSq _]]].
  destruct (Hall p j Hp Hj) as [HQ [HX _]].
  destruct Hg as [Hv _].
  split.
  - unfold Xij, xh, xx, Row.xh, Row.xx, QQ, Row.QQ, b_gdot, b_etaq, g0, nm0.
    apply logit_err; [exact Hv|exact HSq].
  - unfold Xij, b_xi. pose proof u_pos. pose proof (coefs_nonneg c rw el q kr slope pos vr P Lp xm Hmags (proj1 ok_ab) (proj2 ok_ab)) as CN.
    destruct CN as [PG _].
    assert (b_gdot c * (1 + u) * QQ p j <= b_gdot c * (1 + u) * r_Qm rw) by (apply Rmult_le_compat_l; nra).
    assert (u * Rabs (xx p j) <= u * r_X rw) by (apply Rmult_le_compat_l; lra).
    lra.
Qed.

Lemma xh_fmtb : forall p j, fmtb (xh p j).
Proof. intros p j. unfold Row.xh, logit_hat. apply fmtb_rnd. Qed.

Definition mh (p : nat) : R := pmax (Lp p) (xh p).
Definition ee (p j : nat) : R := ehat fe (Lp p) (xh p) j.
Definition sh (p : nat) : R := shat g (Lp p) (ee p).

Lemma mh_fmtb : forall p, (p < P)%nat -> fmtb (mh p).
Proof. intros p Hp. apply pmax_fmtb; [apply HLp; auto|intros; apply xh_fmtb]. Qed.

(** Any reference max M over the partitions' maxima: the logits it is measured from lie
    within t_max below it, and it is within Xi of the exact max. *)
Section Ref.
Variable M : R.
Hypothesis HMge : forall p, (p < P)%nat -> mh p <= M.
Hypothesis HMatt : exists p, (p < P)%nat /\ M = mh p.

Lemma M_le : M <= xm + b_xi c rw.
Proof.
  destruct HMatt as [p [Hp ->]]. destruct (pmax_att (Lp p) (xh p) (HLp p Hp)) as [j [Hj E]].
  unfold mh. rewrite E. destruct (xh_err p j Hp Hj) as [E1 E2].
  destruct Hmags as [Hall _]. destruct (Hall p j Hp Hj) as [_ [_ [_ [Hx _]]]].
  apply Rabs_le_inv in E1. lra.
Qed.

Lemma t_bounds : forall p j, (p < P)%nat -> (j < Lp p)%nat ->
  0 <= M - xh p j /\ M - xh p j <= b_tmax c rw /\
  M - xh p j <= xm - xx p j + 2 * b_xi c rw.
Proof.
  intros p j Hp Hj. destruct (xh_err p j Hp Hj) as [E1 E2]. apply Rabs_le_inv in E1.
  pose proof M_le. pose proof (pmax_ge (Lp p) (xh p) j Hj). pose proof (HMge p Hp). unfold mh in *.
  destruct Hmags as [Hall _]. destruct (Hall p j Hp Hj) as [_ [_ [_ [Hx Hs]]]].
  unfold b_tmax. lra.
Qed.

Lemma tau_bound : forall p j, (p < P)%nat -> (j < Lp p)%nat ->
  Xij p j + u * (M - xh p j) <= b_phm c rw /\
  b_m0 c rw + b_m1 c rw * (M - xh p j) <= b_mum c rw /\
  b_kc c rw * (Xij p j + u * (M - xh p j) + b_m0 c rw + b_m1 c rw * (M - xh p j))
    <= TT c rw q kr slope pos xm p j.
Proof.
  intros p j Hp Hj.
  destruct (t_bounds p j Hp Hj) as [T0 [T1 T2]]. destruct (xh_err p j Hp Hj) as [_ E2].
  destruct (coefs_nonneg c rw el q kr slope pos vr P Lp xm Hmags (proj1 ok_ab) (proj2 ok_ab))
    as [PG [PE [PX [PT [PA [PB [PEm [PM0 [PM1 [PMu [PPh [PK [PCq [PCg [PC0 PTm]]]]]]]]]]]]]]].
  pose proof u_pos. set (t := M - xh p j) in *.
  assert (A1 : Xij p j + u * t <= b_phm c rw).
  { unfold b_phm. assert (u * t <= u * (b_tmax c rw * (1 + u))).
    { apply Rmult_le_compat_l; [lra|]. nra. }
    lra. }
  assert (A2 : b_m0 c rw + b_m1 c rw * t <= b_mum c rw).
  { unfold b_mum. assert (b_m1 c rw * t <= b_m1 c rw * b_tmax c rw) by (apply Rmult_le_compat_l; lra). lra. }
  split; [exact A1|]. split; [exact A2|].
  unfold TT. apply Rmin_glb.
  - apply Rmult_le_compat_l; [exact PK|]. unfold Xij, b_cqk, b_c0, b_cgap.
    destruct Hmags as [Hall _]. destruct (Hall p j Hp Hj) as [_ [_ [_ [Hx _]]]].
    assert ((u + b_m1 c rw) * t <= (u * (1 + u) + b_m1 c rw) * (xm - xx p j + 2 * b_xi c rw)).
    { apply Rmult_le_compat; try nra. }
    lra.
  - unfold b_Tm. apply Rmult_le_compat_l; [exact PK|]. lra.
Qed.

End Ref.

Definition Mg : R := mx mh (P - 1).

Lemma Mg_ge : forall p, (p < P)%nat -> mh p <= Mg.
Proof. intros p Hp. unfold Mg. apply (mx_ge mh (P - 1) p). lia. Qed.
Lemma Mg_att : exists p, (p < P)%nat /\ Mg = mh p.
Proof. unfold Mg. destruct (mx_att mh (P - 1)) as [p [Hp E]]. exists p. split; [lia|exact E]. Qed.

(** The weights e_j of partition p: floats in [0, e_max], one of them >= e0, so the
    exp-sum is at least s_min. *)
Lemma ee_props : forall p, (p < P)%nat ->
  (forall j, (j < Lp p)%nat -> fmtb (ee p j) /\ 0 <= ee p j /\ ee p j <= b_emax c rw
                              /\ ee p j = fe (rnd (xh p j - mh p))) /\
  b_e0 c <= sumn (ee p) (Lp p).
Proof.
  intros p Hp.
  assert (HT : forall j, (j < Lp p)%nat -> rnd (xh p j - mh p) <= 0 /\
                 Rabs (rnd (xh p j - mh p)) <= (1 + u) * b_tmax c rw).
  { intros j Hj. pose proof (pmax_ge (Lp p) (xh p) j Hj) as Hle. fold (mh p) in Hle.
    destruct (exp_rnd_sub (xh p j) (mh p) (xh_fmtb p j) (mh_fmtb p Hp) Hle) as [d [Hd [E Ht]]].
    split; [exact Ht|]. rewrite E, Rabs_mult.
    rewrite (Rabs_sub_le (xh p j) (mh p)) by exact Hle.
    destruct (t_bounds Mg Mg_ge Mg_att p j Hp Hj) as [_ [T1 _]]. pose proof (Mg_ge p Hp).
    pose proof u_pos.
    assert (Rabs (1 + d) <= 1 + u) by (apply Rabs_le; apply Rabs_le_inv in Hd; lra).
    assert ((mh p - xh p j) * Rabs (1 + d) <= b_tmax c rw * (1 + u))
      by (apply Rmult_le_compat; try lra; apply Rabs_pos).
    lra. }
  assert (EE : forall j, (j < Lp p)%nat -> ee p j = fe (rnd (xh p j - mh p))).
  { intros j Hj. unfold ee, mh. apply ehat_eq. apply (Hfe _ (proj1 (HT j Hj))). }
  assert (P1 : forall j, (j < Lp p)%nat -> fmtb (ee p j) /\ 0 <= ee p j /\ ee p j <= b_emax c rw
                              /\ ee p j = fe (rnd (xh p j - mh p))).
  { intros j Hj. rewrite (EE j Hj). destruct (HT j Hj) as [T0 T1].
    destruct (Hfe _ T0) as [F [Pz _]]. split; [exact F|]. split; [exact Pz|]. split; [|reflexivity].
    unfold b_emax, b_em. apply (fe_le fe (b_alpha c) (b_beta c) eta_e (b_tmax c rw) Hfe PAl PBe PEe); auto. }
  split; [exact P1|].
  destruct (pmax_att (Lp p) (xh p) (HLp p Hp)) as [j0 [Hj0 E0]]. fold (mh p) in E0.
  apply Rle_trans with (ee p j0).
  - rewrite (EE j0 Hj0), <- E0. replace (mh p - mh p) with 0 by ring. rewrite rnd_0.
    apply (fe_ge0 fe (b_alpha c) (b_beta c) eta_e Hfe PAl PBe PEe).
  - apply sumn_ge_term; [exact Hj0|intros; apply P1; auto].
Qed.

Lemma sh_props : forall p, (p < P)%nat ->
  Rabs (sh p - sumn (ee p) (Lp p)) <= b_gs c rw * sumn (ee p) (Lp p) /\
  b_smin c rw <= sh p /\ 0 < sh p /\ fmtb (sh p).
Proof.
  intros p Hp. destruct (ee_props p Hp) as [P1 P2].
  assert (He : forall j, (j < Lp p)%nat -> fmtb (ee p j) /\ 0 <= ee p j)
    by (intros j Hj; destruct (P1 j Hj) as [A [B _]]; auto).
  pose proof (shat_err g (Lp p) (ee p) Hg He) as S.
  assert (Hgs : Sums.g (hs g (Lp p)) <= b_gs c rw) by (apply g_mono, hs_mono, HLb, Hp).
  assert (PS : 0 <= sumn (ee p) (Lp p)) by (apply sumn_nonneg; intros; apply He; auto).
  assert (S' : Rabs (sh p - sumn (ee p) (Lp p)) <= b_gs c rw * sumn (ee p) (Lp p)).
  { eapply Rle_trans; [exact S|]. apply Rmult_le_compat_r; lra. }
  destruct Hok as [_ [_ [_ [_ [He0 [Hgs1 _]]]]]].
  assert (Pgs : 0 <= b_gs c rw) by apply g_nonneg.
  assert (Sm : b_smin c rw <= sh p).
  { unfold b_smin. apply Rabs_le_inv in S'.
    assert ((1 - b_gs c rw) * b_e0 c <= (1 - b_gs c rw) * sumn (ee p) (Lp p))
      by (apply Rmult_le_compat_l; lra).
    lra. }
  split; [exact S'|]. split; [exact Sm|]. split.
  - eapply Rlt_le_trans; [|exact Sm]. unfold b_smin. apply Rmult_lt_0_compat; lra.
  - apply shat_fmtb; auto.
Qed.

(** * Each partition's result with the bound's constants *)

Lemma pcs_mono_max : forall a b, PC (pc_aN a) (pc_bN a) (pc_eN a) (pc_th a) (pc_ze a) = a ->
  pc_aN a <= pc_aN (pc_max a b) /\ pc_bN a <= pc_bN (pc_max a b) /\ pc_eN a <= pc_eN (pc_max a b) /\
  pc_th a <= pc_th (pc_max a b) /\ pc_ze a <= pc_ze (pc_max a b).
Proof. intros a b _. unfold pc_max. simpl. repeat split; apply Rmax_l. Qed.

Lemma pcs_mono_max_r : forall a b,
  pc_aN b <= pc_aN (pc_max a b) /\ pc_bN b <= pc_bN (pc_max a b) /\ pc_eN b <= pc_eN (pc_max a b) /\
  pc_th b <= pc_th (pc_max a b) /\ pc_ze b <= pc_ze (pc_max a b).
Proof. intros a b. unfold pc_max. simpl. repeat split; apply Rmax_r. Qed.

Lemma Vk_nonneg : 0 <= b_Vk c rw.
Proof.
  destruct Hok as [_ [_ [PV _]]]. unfold b_Vk. destruct (n_vl nm).
  - unfold vv_max, rw_fast, zw_fast. destruct (n_fp8 nm).
    + pose proof (rp_nonneg (n_s nm)). pose proof (zp_nonneg (n_s nm)). nra.
    + lra.
  - destruct (n_fp8 nm); [|lra]. apply Rmult_le_pos; [lra|].
    destruct (Req_dec (k_vs c) 0) as [Z|Z].
    + rewrite Z, Rabs_R0, Rinv_0. lra.
    + left. apply Rinv_0_lt_compat. apply Rabs_pos_lt. exact Z.
Qed.

Lemma part_in : forall p rare, (p < P)%nat ->
  PartRes (o_ns nm (k_vs c) (o_pre g nm (k_vs c) (Lp p) (ee p) (vr p) rare)) (sh p) (Lp p) (ee p) (vv p)
    (pc_aN (pcs g nm (k_vs c) (r_L rw) (b_smin c rw) (b_emax c rw) (r_V rw) rare))
    (pc_bN (pcs g nm (k_vs c) (r_L rw) (b_smin c rw) (b_emax c rw) (r_V rw) rare))
    (pc_eN (pcs g nm (k_vs c) (r_L rw) (b_smin c rw) (b_emax c rw) (r_V rw) rare))
    (pc_th (pcs g nm (k_vs c) (r_L rw) (b_smin c rw) (b_emax c rw) (r_V rw) rare))
    (pc_ze (pcs g nm (k_vs c) (r_L rw) (b_smin c rw) (b_emax c rw) (r_V rw) rare)).
Proof.
  intros p rare Hp. destruct (ee_props p Hp) as [P1 P2]. destruct (sh_props p Hp) as [S1 [S2 [S3 S4]]].
  destruct Hmags as [Hall _].
  destruct Hok as [_ [_ [PV [_ [He0 [Hgs1 [_ [_ [Hvl _]]]]]]]]].
  assert (Pemax : 0 <= b_emax c rw).
  { destruct (P1 O ltac:(pose proof (HLp p Hp); lia)) as [_ [A [B _]]]. lra. }
  assert (Psm : 0 < b_smin c rw).
  { unfold b_smin. apply Rmult_lt_0_compat; lra. }
  apply (part_res g nm (k_vs c) (Lp p) (r_L rw) (ee p) (vr p) (vv p) (r_V rw) (b_smin c rw)
           (b_emax c rw) rare Hg (HLb p Hp) Pemax).
  - intros j Hj. destruct (P1 j Hj) as [A [B _]]. auto.
  - intros j Hj. apply P1, Hj.
  - intros j Hj. apply Fvr; auto.
  - intros j Hj. reflexivity.
  - intros j Hj. apply (Hall p j Hp Hj).
  - exact PV.
  - exact Psm.
  - exact S2.
  - exact Hvl.
Qed.

Variable rare : nat -> bool.
Hypothesis Hrare : forall p, (p < P)%nat -> rare p = true ->
  pv_flag g (Lp p) (probs g nm (Lp p) (ee p)) (b_Vk c rw).

Lemma emax_nonneg : 0 <= b_emax c rw.
Proof.
  unfold b_emax. destruct (coefs_nonneg c rw el q kr slope pos vr P Lp xm Hmags (proj1 ok_ab) (proj2 ok_ab))
    as [_ [_ [_ [_ [_ [_ [PEm _]]]]]]].
  pose proof PEe. lra.
Qed.

Lemma smin_pos : 0 < b_smin c rw.
Proof.
  destruct Hok as [_ [_ [_ [_ [He0 [Hgs1 _]]]]]]. unfold b_smin. apply Rmult_lt_0_compat; lra.
Qed.

Lemma pm_nonneg : 0 <= b_pm c rw.
Proof.
  pose proof emax_nonneg. pose proof smin_pos. unfold b_pm. destruct (n_vl nm) eqn:Evl; [|lra].
  destruct Hok as [_ [_ [_ [_ [_ [_ [_ [_ [Hvl _]]]]]]]]]. destruct (Hvl Evl) as [He Hth].
  unfold pmax_v. pose proof (rp_nonneg (n_s nm)). pose proof (zp_nonneg (n_s nm)). pose proof eta_pos.
  assert (0 <= thv (b_smin c rw)) by (apply thv_nonneg; assumption).
  assert (0 <= (1 + thv (b_smin c rw)) / b_smin c rw) by (apply Rmult_le_pos; [lra|left; apply Rinv_0_lt_compat; lra]).
  assert (0 <= b_emax c rw * ((1 + thv (b_smin c rw)) / b_smin c rw + eta)) by (apply Rmult_le_pos; lra).
  nra.
Qed.

Lemma pre_no_rare : forall p, (p < P)%nat -> b_pre c rw = true -> rare p = false.
Proof.
  intros p Hp Hpre. destruct (rare p) eqn:E; [|reflexivity]. exfalso.
  destruct (ee_props p Hp) as [P1 _]. destruct (sh_props p Hp) as [_ [S2 _]].
  destruct Hok as [_ [_ [_ [_ [_ [_ [_ [_ [Hvl _]]]]]]]]].
  apply (pv_no_flag g (Lp p) (probs g nm (Lp p) (ee p)) (b_Vk c rw) (b_pm c rw) Hg);
    [| apply pm_nonneg | apply Vk_nonneg | |apply Hrare; auto].
  - intros j Hj. unfold b_pm.
    apply (probs_bound g nm (Lp p) (ee p) (b_smin c rw) (b_emax c rw) Hg).
    + intros j' Hj'. destruct (P1 j' Hj') as [A [B _]]. auto.
    + intros j' Hj'. apply P1, Hj'.
    + apply smin_pos.
    + exact S2.
    + intros H. apply Hvl, H.
    + exact Hj.
  - unfold b_pre in Hpre. destruct (Rle_dec _ _) as [H|H]; [|discriminate].
    eapply Rle_trans; [|exact H].
    pose proof (ho_mono g _ _ (HLb p Hp)) as Hh. pose proof (pow1u_mono _ _ Hh).
    pose proof (le_INR _ _ (HLb p Hp)). pose proof eta_pos. pose proof (pos_INR (Lp p)).
    pose proof (pow1u_ge1 (ho g (Lp p))). pose proof Vk_nonneg. pose proof pm_nonneg.
    assert (Pm : 0 <= b_pm c rw * b_Vk c rw + eta) by nra.
    apply Rmult_le_compat; [lra|nra|lra|]. apply Rmult_le_compat_r; lra.
Qed.

(** The partition's constants in the bound cover the path taken. *)
Lemma part_U : forall p, (p < P)%nat ->
  PartRes (o_ns nm (k_vs c) (o_pre g nm (k_vs c) (Lp p) (ee p) (vr p) (rare p))) (sh p) (Lp p) (ee p) (vv p)
    (pc_aN (b_pcU c rw)) (pc_bN (b_pcU c rw)) (pc_eN (b_pcU c rw)) (pc_th (b_pcU c rw)) (pc_ze (b_pcU c rw)).
Proof.
  intros p Hp.
  assert (Pe : forall j, (j < Lp p)%nat -> 0 <= ee p j) by (intros j Hj; apply (ee_props p Hp), Hj).
  unfold b_pcU. destruct (b_pre c rw) eqn:Epre.
  - rewrite (pre_no_rare p Hp Epre). apply part_in, Hp.
  - destruct (rare p).
    + destruct (pcs_mono_max_r (b_pcF c rw) (b_pcR c rw)) as [A [B [C [D E]]]].
      eapply PartRes_mono; [exact Pe|exact A|exact B|exact C|exact D|exact E|].
      unfold b_pcR. destruct (andb (k_v2 c) (negb (n_fp8 nm))); [|apply part_in, Hp].
      eapply PartRes_mono; [exact Pe|apply Rle_refl|apply Rle_refl|apply Rle_refl| |apply Rle_refl|apply part_in, Hp].
      simpl. unfold th_sat. apply Rmax_l.
    + destruct (pcs_mono_max (b_pcF c rw) (b_pcR c rw) ltac:(destruct (b_pcF c rw); reflexivity)) as [A [B [C [D E]]]].
      eapply PartRes_mono; [exact Pe|exact A|exact B|exact C|exact D|exact E|apply part_in, Hp].
Qed.

Lemma pcs_nonneg : forall rr,
  let cc := pcs g nm (k_vs c) (r_L rw) (b_smin c rw) (b_emax c rw) (r_V rw) rr in
  0 <= pc_aN cc /\ 0 <= pc_bN cc /\ 0 <= pc_eN cc.
Proof.
  intros rr cc. pose proof u_pos. pose proof eta_pos. pose proof eta64_pos.
  pose proof emax_nonneg. pose proof smin_pos. pose proof (pos_INR (r_L rw)).
  destruct Hok as [_ [_ [PV [_ [_ [Hgs1 [_ [_ [Hvl _]]]]]]]]].
  pose proof (g_nonneg (hs g (r_L rw))) as Pgs.
  assert (Psg : 0 <= sgm nm (k_vs c)) by (unfold sgm; destruct (n_fp8 nm); [apply Rabs_pos|lra]).
  unfold cc, pcs. destruct (n_vl nm) eqn:Evl.
  - destruct (Hvl eq_refl) as [He Hth]. pose proof (thv_nonneg _ smin_pos He).
    pose proof (rp_nonneg (n_s nm)). pose proof (zp_nonneg (n_s nm)).
    set (h := if rr then r_L rw else ho g (r_L rw)).
    pose proof (g_nonneg h).
    set (rw0 := if rr then rw_rare nm else rw_fast nm).
    set (zw0 := if rr then zw_rare nm (k_vs c) else zw_fast nm).
    assert (Prw : 0 <= rw0) by (unfold rw0, rw_rare, rw_fast; destruct rr, (n_fp8 nm); lra).
    assert (Pzw : 0 <= zw0).
    { unfold zw0, zw_rare, zw_fast; destruct rr, (n_fp8 nm); try lra.
      assert (0 <= Rabs (k_vs c) * (1 + u) + 1) by (pose proof (Rabs_pos (k_vs c)); nra). nra. }
    set (smx := smax (r_L rw) (Sums.g (hs g (r_L rw))) (b_emax c rw)).
    assert (Psmx : 0 <= smx) by (unfold smx, smax; apply Rmult_le_pos; [apply Rmult_le_pos|]; lra).
    assert (PK1 : 0 <= K1v (n_s nm) h (b_smin c rw) smx).
    { unfold K1v. apply Rmult_le_pos; [apply Rmult_le_pos|left; apply Rinv_0_lt_compat; lra]; nra. }
    unfold pc_vllm. fold h rw0 zw0. fold smx. simpl.
    split; [unfold aN_v; nra|]. split; [|lra].
    unfold bN_v, vv_max.
    assert (0 <= Sums.g h * (1 + Sums.g (hs g (r_L rw))) * zp (n_s nm) * INR (r_L rw) * ((1 + rw0) * r_V rw + zw0))
      by (repeat apply Rmult_le_pos; nra).
    assert (0 <= Sums.g h * (1 + Sums.g (hs g (r_L rw))) * zp (n_s nm) * INR (r_L rw) * ((1 + rw0) * r_V rw + zw0) / (1 - thv (b_smin c rw)))
      by (apply Rmult_le_pos; [lra|left; apply Rinv_0_lt_compat; lra]).
    nra.
  - destruct rr; unfold pc_ours_rare, pc_ours_fast; simpl.
    + pose proof (g_nonneg (r_L rw)). pose proof (pow1u_ge1 (r_L rw)).
      split; [lra|]. split; repeat apply Rmult_le_pos; lra.
    + pose proof (g_nonneg (ho g (r_L rw))). pose proof (pow1u_ge1 (ho g (r_L rw))).
      split; [lra|]. split; [lra|]. repeat apply Rmult_le_pos; lra.
Qed.

Lemma pcU_nonneg : 0 <= pc_aN (b_pcU c rw) /\ 0 <= pc_bN (b_pcU c rw) /\ 0 <= pc_eN (b_pcU c rw).
Proof.
  destruct (pcs_nonneg false) as [A1 [B1 C1]]. destruct (pcs_nonneg true) as [A2 [B2 C2]].
  fold (b_pcF c rw) in A1, B1, C1. fold (b_pcR0 c rw) in A2, B2, C2.
  unfold b_pcU. destruct (b_pre c rw); [auto|].
  unfold pc_max. simpl.
  split; [apply Rle_trans with (pc_aN (b_pcF c rw)); [exact A1|apply Rmax_l]|].
  split; [apply Rle_trans with (pc_bN (b_pcF c rw)); [exact B1|apply Rmax_l]|].
  apply Rle_trans with (pc_eN (b_pcF c rw)); [exact C1|apply Rmax_l].
Qed.

(** V2 with a scalar cache: the rare path's saturated partial, with th_sat. *)
Lemma part_U_sat : forall p, (p < P)%nat -> k_v2 c = true ->
  PartRes (part_o g nm (k_vs c) (Lp p) (ee p) (vr p) (rare p)) (sh p) (Lp p) (ee p) (vv p)
    (pc_aN (b_pcU c rw)) (pc_bN (b_pcU c rw)) (pc_eN (b_pcU c rw)) (pc_th (b_pcU c rw)) (pc_ze (b_pcU c rw)).
Proof.
  intros p Hp Hv2. unfold part_o. rewrite o_fin_split.
  destruct (andb (rare p) (negb (n_fp8 nm))) eqn:Er; [|apply part_U, Hp].
  apply andb_prop in Er. destruct Er as [Er Ef]. apply negb_true_iff in Ef.
  assert (Pe : forall j, (j < Lp p)%nat -> 0 <= ee p j) by (intros j Hj; apply (ee_props p Hp), Hj).
  destruct Hok as [_ [_ [PV [_ [He0 [Hgs1 [_ [_ [_ [_ [Hsat _]]]]]]]]]]].
  destruct (Hsat Hv2 Ef) as [Hth Hob].
  destruct (sh_props p Hp) as [S1 [S2 [S3 S4]]].
  assert (Psm : 0 < b_smin c rw) by (unfold b_smin; apply Rmult_lt_0_compat; lra).
  pose proof (part_in p (rare p) Hp) as R. rewrite Er in R. fold (b_pcR0 c rw) in R.
  destruct (pcs_nonneg true) as [NA [NB NE]]. fold (b_pcR0 c rw) in NA, NB, NE.
  pose proof (g_nonneg (hs g (r_L rw))) as Pgs. fold (b_gs c rw) in Pgs.
  assert (Hb : Rabs (o_ns nm (k_vs c) (o_pre g nm (k_vs c) (Lp p) (ee p) (vr p) true)) <= b_ob c rw).
  { apply (partres_bound _ _ (Lp p) (ee p) (vv p) _ _ _ _ _ (r_V rw) (b_gs c rw) (b_smin c rw) R Pe);
      auto; try lra.
    - intros j Hj. destruct Hmags as [Hall _]. apply (Hall p j Hp Hj).
    - apply Rabs_le_inv in S1. lra. }
  pose proof (sat_partres _ _ _ _ _ _ _ _ _ _ _ R Hth Hb Hob) as RS.
  assert (Hpre : b_pre c rw = false).
  { destruct (b_pre c rw) eqn:E; [|reflexivity]. pose proof (pre_no_rare p Hp E). congruence. }
  unfold b_pcU. rewrite Hpre.
  destruct (pcs_mono_max_r (b_pcF c rw) (b_pcR c rw)) as [A [B [C [D E]]]].
  eapply PartRes_mono; [exact Pe|exact A|exact B|exact C|exact D|exact E|].
  unfold b_pcR. rewrite Hv2, Ef. simpl. rewrite Er. exact RS.
Qed.

End Tok.
