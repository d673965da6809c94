(** paged_attention_v1 (and V2 with a single partition, which copies it): one partition of
    all n tokens, then the output's rounding. *)
From Coq Require Import Bool Reals List Lra Lia.
From Flocq Require Import Core.
From PagedAttn Require Import Fp Sums Err Compose Model Logit Weights Part PartK Bound Kernel Row Tokens.
Open Scope R_scope.

Section V1.
Variables (c : kcfg) (rw : krow) (el : kel).
Variables (q : nat -> R) (kr : nat -> nat -> nat -> R) (slope : R) (pos : nat -> nat -> R).
Variables (vr : nat -> nat -> R) (Lp : nat -> nat) (xm : R) (fe : R -> R) (rare : nat -> bool).

Notation g := (k_g c).
Notation nm := (k_nm c).

Hypothesis Hmags : mags_ok c rw el q kr slope pos vr 1 Lp xm.
Hypothesis HL0 : (1 <= Lp O)%nat.
Hypothesis HLb : (Lp O <= r_L rw)%nat.
Hypothesis Hg : geom_ok g.
Hypothesis Hfe : exp_ok fe (b_alpha c) (b_beta c) eta_e.
Hypothesis Hok : bound_ok c rw.
Hypothesis Fvr : forall j, (j < Lp O)%nat -> fmtb (vr O j).
Hypothesis Hv1 : k_v2 c = false.
Hypothesis Hrare : rare O = true ->
  pv_flag g (Lp O) (probs g nm (Lp O) (ee c q kr slope pos Lp fe O)) (b_Vk c rw).

Lemma yy_le_V : Rabs (yy c q kr slope pos vr 1 Lp) <= r_V rw.
Proof.
  destruct Hmags as [Hall _].
  set (pp0 := pp c q kr slope pos 1 Lp).
  unfold yy. fold pp0. eapply Rle_trans; [apply sum2_abs|].
  apply Rle_trans with (sum2 1 Lp (fun p j => r_V rw * pp0 p j)).
  - apply sum2_le. intros p j Hp Hj.
    rewrite Rabs_mult, (Rabs_pos_eq (pp0 p j)) by (apply (pp_nonneg c rw el q kr slope pos vr 1 Lp xm Hmags); auto).
    rewrite (Rmult_comm (r_V rw)). apply Rmult_le_compat_l;
      [apply (pp_nonneg c rw el q kr slope pos vr 1 Lp xm Hmags); auto|apply (Hall p j Hp Hj)].
  - rewrite sum2_scal. unfold pp0. rewrite (pp_sum c rw el q kr slope pos vr 1 Lp xm Hmags). lra.
Qed.

Theorem v1_error :
  Rabs (v1_out g nm (k_vs c) fe (Lp O) (Row.xh c q kr slope pos O) (vr O) (rare O)
        - yy c q kr slope pos vr 1 Lp) <= b_total c rw el.
Proof.
  assert (HP : (1 <= 1)%nat) by lia.
  assert (HLp : forall p, (p < 1)%nat -> (1 <= Lp p)%nat) by (intros p Hp; replace p with O by lia; exact HL0).
  assert (HLb' : forall p, (p < 1)%nat -> (Lp p <= r_L rw)%nat) by (intros p Hp; replace p with O by lia; exact HLb).
  assert (Fvr' : forall p j, (p < 1)%nat -> (j < Lp p)%nat -> fmtb (vr p j))
    by (intros p j Hp Hj; replace p with O in * by lia; apply Fvr, Hj).
  assert (Hrare' : forall p, (p < 1)%nat -> rare p = true ->
            pv_flag g (Lp p) (probs g nm (Lp p) (ee c q kr slope pos Lp fe p)) (b_Vk c rw))
    by (intros p Hp; replace p with O by lia; exact Hrare).
  destruct (ok_ab c rw Hok) as [Ha Hb].
  set (M := mh c q kr slope pos Lp O).
  set (W := fun p j => ee c q kr slope pos Lp fe p j).
  assert (HMge : forall p, (p < 1)%nat -> mh c q kr slope pos Lp p <= M)
    by (intros p Hp; replace p with O by lia; apply Rle_refl).
  assert (HMatt : exists p, (p < 1)%nat /\ M = mh c q kr slope pos Lp p) by (exists O; split; [lia|reflexivity]).
  destruct (ee_props c rw el q kr slope pos vr 1 Lp xm fe Hmags HP HLp Hg Hfe Hok O ltac:(lia)) as [E1 E2].
  destruct (sh_props c rw el q kr slope pos vr 1 Lp xm fe Hmags HP HLp HLb' Hg Hfe Hok O ltac:(lia))
    as [S1 [S2 [S3 S4]]].
  destruct (part_U c rw el q kr slope pos vr 1 Lp xm fe Hmags HP HLp HLb' Hg Hfe Hok Fvr' rare Hrare' O ltac:(lia))
    as [N [th' [ze' [HN [Eo [Hth Hze]]]]]].
  assert (PEe : 0 <= eta_e) by (unfold eta_e; apply bpow_ge_0).
  assert (Hm01 : b_m0 c rw = m0_1 (b_alpha c) /\ b_m1 c rw = m1_1 (b_beta c))
    by (unfold b_m0, b_m1; rewrite Hv1; split; reflexivity).
  assert (HZ : b_Z c rw = eta_e) by (unfold b_Z; rewrite Hv1; reflexivity).
  (* the weights *)
  assert (HWb : forall p j, (p < 1)%nat -> (j < Lp p)%nat ->
            Rabs (W p j - exp (Row.xx c q kr slope pos p j - M))
            <= TT c rw q kr slope pos xm p j * exp (Row.xx c q kr slope pos p j - M) + b_Z c rw).
  { intros p j Hp Hj. replace p with O in * by lia.
    destruct (xh_err c rw el q kr slope pos vr 1 Lp xm Hmags Hg Hok O j ltac:(lia) Hj) as [X1 X2].
    destruct (tau_bound c rw el q kr slope pos vr 1 Lp xm Hmags HLp Hg Hok M HMge HMatt O j ltac:(lia) Hj)
      as [T1 [T2 T3]].
    destruct Hm01 as [Em0 Em1]. rewrite Em0, Em1 in T2, T3.
    pose proof (pmax_ge (Lp O) (Row.xh c q kr slope pos O) j Hj) as Hle.
    destruct (weight_v1 fe (b_alpha c) (b_beta c) eta_e Hfe (PAl c rw Hok) (PBe c rw Hok) PEe
                (Row.xh c q kr slope pos O j) (Row.xx c q kr slope pos O j)
                (Xij c rw q kr slope pos O j) M (b_phm c rw) (b_mum c rw)
                (xh_fmtb c q kr slope pos O j) (mh_fmtb c q kr slope pos 1 Lp HLp O ltac:(lia)) Hle X1 T1 T2)
      as [tau [z [Ew [Ht Hz]]]].
    fold (b_kc c rw) in Ht.
    unfold W. destruct (E1 j Hj) as [_ [_ [_ Eej]]]. rewrite Eej. fold M. rewrite Ew, HZ.
    apply weight_dev; [apply exp_pos | lra | lra]. }
  (* the sums *)
  assert (Hok' := Hok).
  destruct Hok as [_ [_ [PV [HVf [He0 [Hgs1 [Hd0 [HaD _]]]]]]]].
  assert (Hcoef : 0 <= b_aN c rw /\ 0 <= b_bN c rw /\ 0 <= b_eN c rw /\ 0 <= b_aD c rw < 1 /\ 0 <= b_th c rw).
  { unfold b_aN, b_bN, b_eN, b_aD, b_th. rewrite Hv1.
    destruct (pcU_nonneg c rw el q kr slope pos vr 1 Lp xm Hmags Hok') as [A1 [B1 C1]].
    pose proof (g_nonneg (hs g (r_L rw))). fold (b_gs c rw) in H.
    pose proof (Rabs_pos th'). repeat split; lra. }
  set (S := sh c q kr slope pos Lp fe O).
  set (o := o_ns nm (k_vs c) (o_pre g nm (k_vs c) (Lp O) (ee c q kr slope pos Lp fe O) (vr O) (rare O))).
  assert (HWp : forall p j, (p < 1)%nat -> (j < Lp p)%nat -> 0 <= W p j).
  { intros p j Hp Hj. replace p with O in * by lia. apply (E1 j Hj). }
  assert (HM : M <= xm + b_xi c rw) by (apply (M_le c rw el q kr slope pos vr 1 Lp xm Hmags HLp Hg Hok' M HMge HMatt)).
  assert (HZ' : 0 <= b_Z c rw) by (rewrite HZ; exact PEe).
  assert (HN' : Rabs (N - sum2 1 Lp (fun i j => W i j * vv c vr i j))
                <= b_aN c rw * sum2 1 Lp (fun i j => W i j * Rabs (vv c vr i j)) + b_bN c rw * sum2 1 Lp W + b_eN c rw).
  { unfold b_aN, b_bN, b_eN. rewrite Hv1, !sum2_one. exact HN. }
  assert (HD' : Rabs (S - sum2 1 Lp W) <= b_aD c rw * sum2 1 Lp W).
  { unfold b_aD. rewrite Hv1, sum2_one. exact S1. }
  assert (Ho' : exists th' ze', o = N / S * (1 + th') + ze' /\ Rabs th' <= b_th c rw /\ Rabs ze' <= b_ze c rw).
  { exists th', ze'. unfold b_th, b_ze. rewrite Hv1. auto. }
  pose proof (row_assemble c rw el q kr slope pos vr 1 Lp xm Hmags Ha Hb W M N S o HWp HWb HM HZ' Hd0 HN' HD' Ho' Hcoef) as RA.
  (* the output: saturation on the rare path of a scalar cache, then from_float *)
  assert (HY : Rabs (yy c q kr slope pos vr 1 Lp) <= b_Y el).
  { destruct Hmags as [_ [_ [_ [_ [_ [_ [HA [_ [_ [_ [_ [HYe _]]]]]]]]]]]].
    unfold b_Y. apply Rmin_glb; [exact HYe|].
    eapply Rle_trans; [|exact HA]. unfold yy. eapply Rle_trans; [apply sum2_abs|]. apply sum2_le.
    intros p j Hp Hj. rewrite Rabs_mult, (Rabs_pos_eq (pp c q kr slope pos 1 Lp p j))
      by (apply (pp_nonneg c rw el q kr slope pos vr 1 Lp xm Hmags); auto). lra. }
  unfold v1_out, part_o. fold (ee c q kr slope pos Lp fe O). rewrite o_fin_split. fold o.
  unfold b_total, b_final.
  apply final_round; [|exact HY].
  destruct (andb (rare O) (negb (n_fp8 nm))); [|exact RA].
  eapply Rle_trans; [apply saturate_closer|exact RA].
  pose proof yy_le_V. lra.
Qed.

End V1.
