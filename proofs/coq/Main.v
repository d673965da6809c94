(** Theorem kernel_error_bound (proofs/error_bound.md): every output element of
    paged_attention_v1 and paged_attention_v2, for our numerics and vllm_compatible, a
    scalar or an fp8 cache, whichever path (fast or rescue) each partition and the reduce
    take, is within Bound.b_total of the exact softmax-weighted value; and under the bound's
    logit precondition no value of the fast q.k tree overflows (the scaling and the ALiBi
    fma after it are not covered: proofs/README.md, "The rare paths"). *)
From Coq Require Import Bool Reals List Lra Lia.
From Flocq Require Import Core.
From PagedAttn Require Import Fp Sums Err LseRound Compose Model Logit Weights Part PartK Bound
  Kernel Row Tokens V1 V2.
Open Scope R_scope.

(** The output element the kernels write: V1, or V2 (the reduce of P >= 2 partitions). *)
Definition kernel_out (c : kcfg) (fe : R -> R) (P : nat) (Lp : nat -> nat) (xh vr : nat -> nat -> R)
    (rare : nat -> bool) (rrare : bool) : R :=
  if k_v2 c then v2_out (k_g c) (k_nm c) (k_vs c) fe P Lp xh vr rare rrare
  else v1_out (k_g c) (k_nm c) (k_vs c) fe (Lp O) (xh O) (vr O) (rare O).

(** V2 with one partition copies its partial (reduce_kernel.cuh, num_parts <= 1): its weight
    is not 0, so the output is V1's. *)
Lemma v2_copy_eq_v1 : forall c rw el q kr slope pos vr Lp xm fe rare,
  mags_ok c rw el q kr slope pos vr 1 Lp xm -> (1 <= Lp O)%nat -> (Lp O <= r_L rw)%nat ->
  geom_ok (k_g c) -> exp_ok fe (b_alpha c) (b_beta c) eta_e -> bound_ok c rw ->
  v2_copy_out (k_g c) (k_nm c) (k_vs c) fe (Lp O) (Row.xh c q kr slope pos O) (vr O) (rare O)
  = v1_out (k_g c) (k_nm c) (k_vs c) fe (Lp O) (Row.xh c q kr slope pos O) (vr O) (rare O).
Proof.
  intros c rw el q kr slope pos vr Lp xm fe rare Hm HL HLb Hg Hfe Hok.
  assert (HLp : forall p, (p < 1)%nat -> (1 <= Lp p)%nat) by (intros p Hp; replace p with O by lia; exact HL).
  assert (HLb' : forall p, (p < 1)%nat -> (Lp p <= r_L rw)%nat) by (intros p Hp; replace p with O by lia; exact HLb).
  destruct (sh_props c rw el q kr slope pos vr 1 Lp xm fe Hm ltac:(lia) HLp HLb' Hg Hfe Hok O ltac:(lia))
    as [_ [S2 [S3 _]]].
  pose proof (fe_ge0 fe (b_alpha c) (b_beta c) eta_e Hfe (PAl c rw Hok) (PBe c rw Hok) PEe) as F0.
  pose proof (smin_pos c rw Hok) as Psm.
  destruct Hok as [_ [_ [_ [_ [He0 [_ [_ [_ [_ [_ [_ [_ Hcw]]]]]]]]]]]].
  unfold sh, ee in S2.
  unfold v2_copy_out, state_of, ws_weight, mm, ss, oo. cbn [fst snd].
  set (s := shat (k_g c) (Lp O) (ehat fe (Lp O) (Row.xh c q kr slope pos O))) in *.
  replace (pmax (Lp O) (Row.xh c q kr slope pos O) - pmax (Lp O) (Row.xh c q kr slope pos O)) with 0 by ring.
  rewrite rnd_0. fold (b_e0 c) in F0.
  assert (Hw : 0 < rnd (s * fe 0)).
  { pose proof (rnd_abs (s * fe 0)) as R. apply Rabs_le_inv in R. pose proof u_small. pose proof u_pos.
    assert (b_smin c rw * b_e0 c <= s * fe 0) by (apply Rmult_le_compat; lra).
    assert (0 <= b_smin c rw * b_e0 c) by (apply Rmult_le_pos; lra).
    rewrite Rabs_pos_eq in R by lra.
    assert (b_smin c rw * b_e0 c * (1 - u) <= s * fe 0 * (1 - u)) by (apply Rmult_le_compat_r; lra).
    lra. }
  destruct (Req_EM_T (rnd (s * fe 0)) 0) as [Z|_]; [lra|].
  unfold partial, v1_out. destruct (n_vl (k_nm c)); [apply cvt_idem|reflexivity].
Qed.

Section Main.
Variables (c : kcfg) (rw : krow) (el : kel).
Variables (q : nat -> R) (kr : nat -> nat -> nat -> R) (slope : R) (pos : nat -> nat -> R).
Variables (vr : nat -> nat -> R) (P : nat) (Lp : nat -> nat) (xm : R) (fe : R -> R).
Variables (rare : nat -> bool) (rrare : bool).

(** The hypotheses: the launch's geometry, the exp's accuracy, the bound's checks, the
    magnitudes as upper bounds of the exact ones, the split into partitions, the values
    read are floats, and the rare P.V path is taken only when an element's partial can
    reach FLT_MAX / NUM_WARPS (what the kernel tests). *)
Definition kernel_hyps : Prop :=
  geom_ok (k_g c) /\ exp_ok fe (b_alpha c) (b_beta c) eta_e /\ bound_ok c rw /\
  mags_ok c rw el q kr slope pos vr P Lp xm /\
  (k_v2 c = false -> P = 1%nat) /\ (k_v2 c = true -> r_P rw = P) /\ (1 <= P)%nat /\
  (forall p, (p < P)%nat -> (1 <= Lp p)%nat /\ (Lp p <= r_L rw)%nat) /\
  (forall p j, (p < P)%nat -> (j < Lp p)%nat -> fmtb (vr p j)) /\
  (forall p, (p < P)%nat -> rare p = true ->
     pv_flag (k_g c) (Lp p) (probs (k_g c) (k_nm c) (Lp p) (ehat fe (Lp p) (Row.xh c q kr slope pos p)))
             (b_Vk c rw)).

End Main.

Theorem kernel_error_bound :
  forall c rw el q kr slope pos vr P Lp xm fe rare rrare,
  kernel_hyps c rw el q kr slope pos vr P Lp xm fe rare ->
  Rabs (kernel_out c fe P Lp (Row.xh c q kr slope pos) vr rare rrare - yy c q kr slope pos vr P Lp)
    <= b_total c rw el /\
  (k_v2 c = false ->
   Rabs (v2_copy_out (k_g c) (k_nm c) (k_vs c) fe (Lp O) (Row.xh c q kr slope pos O) (vr O) (rare O)
         - yy c q kr slope pos vr P Lp) <= b_total c rw el) /\
  (logit_pre c rw -> forall p j, (p < P)%nat -> (j < Lp p)%nat -> forall s,
     sub s (tree_dot (g_lg (k_g c)) (g_vec (k_g c)) (g_D (k_g c)) q
              (fun d => key_used (k_nm c) (k_ks c) (kr p j d))) ->
     Rabs (cv s) <= flt_max).
Proof.
  intros c rw el q kr slope pos vr P Lp xm fe rare rrare
    [Hg [Hfe [Hok [Hm [H1 [H2 [HP [HL [Fvr Hrare]]]]]]]]].
  assert (HLp : forall p, (p < P)%nat -> (1 <= Lp p)%nat) by (intros p Hp; apply HL, Hp).
  assert (HLb : forall p, (p < P)%nat -> (Lp p <= r_L rw)%nat) by (intros p Hp; apply HL, Hp).
  assert (V1case : k_v2 c = false -> Rabs (v1_out (k_g c) (k_nm c) (k_vs c) fe (Lp O) (Row.xh c q kr slope pos O)
                       (vr O) (rare O) - yy c q kr slope pos vr P Lp) <= b_total c rw el).
  { intros Hv1. specialize (H1 Hv1). subst P.
    apply (v1_error c rw el q kr slope pos vr Lp xm fe rare Hm (HLp O ltac:(lia)) (HLb O ltac:(lia)) Hg Hfe Hok
             (fun j Hj => Fvr O j ltac:(lia) Hj) Hv1 (Hrare O ltac:(lia))). }
  split; [|split].
  - unfold kernel_out. destruct (k_v2 c) eqn:Ev.
    + assert (HP2 : (2 <= r_P rw)%nat).
      { destruct Hok as [_ [_ [_ [_ [_ [_ [_ [_ [_ [_ [_ [HP2 _]]]]]]]]]]]]. apply HP2. exact Ev. }
      assert (HrP := H2 eq_refl).
      apply (v2_error c rw el q kr slope pos vr P Lp xm fe rare rrare Hm
               ltac:(rewrite <- HrP; exact HP2) HLp HLb Hg Hfe Hok Fvr Ev HrP Hrare).
    + apply V1case. reflexivity.
  - intros Hv1. pose proof (H1 Hv1) as EP. subst P.
    rewrite (v2_copy_eq_v1 c rw el q kr slope pos vr Lp xm fe rare Hm (HLp O ltac:(lia)) (HLb O ltac:(lia)) Hg Hfe Hok).
    apply V1case, Hv1.
  - intros [Hc Hpre] p j Hp Hj s Hs.
    destruct Hm as [Hall [_ [HSq _]]]. destruct (Hall p j Hp Hj) as [HQ _].
    destruct Hg as [Hv _].
    apply (logit_no_overflow (k_g c) (k_nm c) (k_ks c) q (kr p j) (r_Sq rw)
             (r_Qm rw / Rabs (lg_c (k_nm c) (k_sc c) (k_ks c))) Hv HSq); [|exact Hpre|exact Hs].
    unfold QQ, Row.QQ in HQ. rewrite Qmag_eq in HQ.
    assert (Pc : 0 < Rabs (lg_c (k_nm c) (k_sc c) (k_ks c))) by (apply Rabs_pos_lt, Hc).
    apply (Rmult_le_reg_l (Rabs (lg_c (k_nm c) (k_sc c) (k_ks c)))); [exact Pc|].
    unfold Rdiv. rewrite <- Rmult_assoc, (Rmult_comm _ (r_Qm rw)), Rmult_assoc, Rinv_r, Rmult_1_r by lra.
    exact HQ.
Qed.
