(** The assembly of theorem kernel_error_bound (Main.v): lemma [assemble] composes the
    weights (lemma 4.7), the sums (lemma 5.5) and the tail into |out - y| <= Bound.b_total;
    V1.v and V2.v instantiate it for the kernels' code paths. *)
From Coq Require Import Reals List Lra Lia.
Import ListNotations.
From Flocq Require Import Core.
From PagedAttn Require Import Fp Sums Err LseRound Compose Model Logit Weights Part PartK Bound.
Open Scope R_scope.

(** * Assembly: lemma 4.7, lemma 5.5 and the tail, with the bound's monotone steps *)

Section Assemble.
Variables (P : nat) (L : nat -> nat) (p v W tau z T : nat -> nat -> R).
Variables (K Z Tm V y A Y ST SA Xi : R).
Variables (Nh Dh o aN bN eN aD th ze : R).

Hypothesis Hp : forall i j, (i < P)%nat -> (j < L i)%nat -> 0 <= p i j.
Hypothesis Hsum : sum2 P L p = 1.
Hypothesis Hy : y = sum2 P L (fun i j => p i j * v i j).
Hypothesis HA : sum2 P L (fun i j => p i j * Rabs (v i j)) <= A.
Hypothesis HY : Rabs y <= Y.
Hypothesis HK : exp (- Xi) <= K.
Hypothesis HW : forall i j, (i < P)%nat -> (j < L i)%nat -> W i j = K * p i j * (1 + tau i j) + z i j.
Hypothesis HWp : forall i j, (i < P)%nat -> (j < L i)%nat -> 0 <= W i j.
Hypothesis Htau : forall i j, (i < P)%nat -> (j < L i)%nat -> Rabs (tau i j) <= T i j.
Hypothesis HTm : forall i j, (i < P)%nat -> (j < L i)%nat -> T i j <= Tm.
Hypothesis HTm0 : 0 <= Tm.
Hypothesis Hz : forall i j, (i < P)%nat -> (j < L i)%nat -> Rabs (z i j) <= Z.
Hypothesis HZ : 0 <= Z.
Hypothesis HV : forall i j, (i < P)%nat -> (j < L i)%nat -> Rabs (v i j) <= V.
Hypothesis HST : sum2 P L (fun i j => p i j * T i j) <= ST.
Hypothesis HSA : sum2 P L (fun i j => p i j * T i j * Rabs (v i j - y)) <= SA.
Hypothesis Hd0 : 0 < 1 - ST - ntok P L * (Z * exp Xi).
Hypothesis HN : Rabs (Nh - sum2 P L (fun i j => W i j * v i j))
                <= aN * sum2 P L (fun i j => W i j * Rabs (v i j)) + bN * sum2 P L W + eN.
Hypothesis HD : Rabs (Dh - sum2 P L W) <= aD * sum2 P L W.
Hypothesis Ho : exists th' ze', o = Nh / Dh * (1 + th') + ze' /\ Rabs th' <= th /\ Rabs ze' <= ze.
Hypothesis Hcoef : 0 <= aN /\ 0 <= bN /\ 0 <= eN /\ 0 <= aD < 1 /\ 0 <= th.

Lemma assemble :
  let n := ntok P L in
  let d0 := 1 - ST - n * (Z * exp Xi) in
  let Esm := (SA + Z * exp Xi * (2 * n * V)) / d0 in
  let Aq := (A * (1 + Tm) + Z * exp Xi * n * V) / d0 in
  let Yq := Y + Esm in
  let Es := (aN * Aq + bN + eN / (exp (- Xi) * d0) + aD * Yq) / (1 - aD) in
  Rabs (o - y) <= Esm + Es + th * (Yq + Es) + ze.
Proof.
  intros n d0 Esm Aq Yq Es.
  destruct Hcoef as [PaN [PbN [PeN [[PaD HaD] Pth]]]].
  assert (PK : 0 < K) by (pose proof (exp_pos (- Xi)); lra).
  assert (EZ : Z / K <= Z * exp Xi).
  { unfold Rdiv. apply Rmult_le_compat_l; [lra|].
    replace (exp Xi) with (/ exp (- Xi)) by (rewrite exp_Ropp, Rinv_inv; reflexivity).
    apply Rinv_le_contravar; [apply exp_pos|lra]. }
  pose proof (ntok_nonneg P L) as Pn. fold n in Pn.
  assert (PZK : 0 <= Z / K) by (apply Rmult_le_pos; [lra|left; apply Rinv_0_lt_compat; lra]).
  set (d0c := 1 - ST - n * (Z / K)).
  assert (Hd0c : d0 <= d0c) by (unfold d0, d0c; assert (n * (Z / K) <= n * (Z * exp Xi)) by (apply Rmult_le_compat_l; lra); lra).
  assert (Pd0 : 0 < d0) by exact Hd0.
  assert (Pd0c : 0 < d0c) by lra.
  pose proof (sw_lower P L p W tau z T K Z ST Hp Hsum PK HW Htau Hz HST) as Lo. fold n d0c in Lo.
  pose proof (sw_pos P L p W tau z T K Z ST Hp Hsum PK HW Htau Hz HST Pd0c) as Pos.
  set (SW := sum2 P L W) in *.
  assert (Hyv : Rabs y <= V).
  { rewrite Hy. eapply Rle_trans; [apply sum2_abs|].
    apply Rle_trans with (sum2 P L (fun i j => V * p i j)).
    - apply sum2_le. intros i j Hi Hj. rewrite Rabs_mult, (Rabs_pos_eq (p i j)) by (apply Hp; auto).
      rewrite (Rmult_comm V). apply Rmult_le_compat_l; [apply Hp; auto|apply HV; auto].
    - rewrite sum2_scal, Hsum. lra. }
  assert (PV : 0 <= V) by (pose proof (Rabs_pos y); lra).
  assert (Sdev : sum2 P L (fun i j => Rabs (v i j - y)) <= n * (2 * V)).
  { apply sum2_le_max. intros i j Hi Hj. pose proof (HV i j Hi Hj).
    eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_Ropp. lra. }
  assert (Sabs : sum2 P L (fun i j => Rabs (v i j)) <= n * V) by (apply sum2_le_max; auto).
  assert (PSA : 0 <= SA).
  { eapply Rle_trans; [|exact HSA]. apply sum2_nonneg. intros i j Hi Hj.
    apply Rmult_le_pos; [apply Rmult_le_pos|apply Rabs_pos]; [apply Hp; auto|].
    eapply Rle_trans; [apply Rabs_pos|apply Htau; auto]. }
  assert (PA : 0 <= A).
  { eapply Rle_trans; [|exact HA]. apply sum2_nonneg. intros i j Hi Hj.
    apply Rmult_le_pos; [apply Hp; auto|apply Rabs_pos]. }
  (* lemma 4.7 *)
  pose proof (softmax_perturb P L p v W tau z T K Z y ST SA Hp Hsum Hy PK HW Htau Hz HST HSA Pd0c) as SP.
  fold n d0c SW in SP.
  assert (SP' : Rabs (sum2 P L (fun i j => W i j * v i j) / SW - y) <= Esm).
  { eapply Rle_trans; [exact SP|]. unfold Esm. unfold Rdiv.
    apply Rmult_le_compat.
    - pose proof (sum2_nonneg P L (fun i j => Rabs (v i j - y)) ltac:(intros; apply Rabs_pos)).
      assert (0 <= Z / K * sum2 P L (fun i j => Rabs (v i j - y))) by (apply Rmult_le_pos; lra). lra.
    - left. apply Rinv_0_lt_compat. lra.
    - assert (Z / K * sum2 P L (fun i j => Rabs (v i j - y)) <= Z * exp Xi * (n * (2 * V))).
      { apply Rmult_le_compat; try lra; [apply sum2_nonneg; intros; apply Rabs_pos]. }
      lra.
    - apply Rinv_le_contravar; lra. }
  pose proof (softmax_mag P L p v W tau z T K Z Tm A ST Hp Hsum HA PK HW HWp Htau HTm HTm0 Hz HST Pd0c) as SM.
  fold n d0c SW in SM.
  assert (SM' : sum2 P L (fun i j => W i j * Rabs (v i j)) / SW <= Aq).
  { eapply Rle_trans; [exact SM|]. unfold Aq. unfold Rdiv.
    apply Rmult_le_compat.
    - pose proof (sum2_nonneg P L (fun i j => Rabs (v i j)) ltac:(intros; apply Rabs_pos)).
      assert (0 <= A * (1 + Tm)) by (apply Rmult_le_pos; lra).
      assert (0 <= Z / K * sum2 P L (fun i j => Rabs (v i j))) by (apply Rmult_le_pos; lra). lra.
    - left. apply Rinv_0_lt_compat. lra.
    - assert (Z / K * sum2 P L (fun i j => Rabs (v i j)) <= Z * exp Xi * (n * V)).
      { apply Rmult_le_compat; try lra; [apply sum2_nonneg; intros; apply Rabs_pos]. }
      lra.
    - apply Rinv_le_contravar; lra. }
  (* lemma 5.5 *)
  set (SWmin := exp (- Xi) * d0).
  assert (PSWm : 0 < SWmin) by (unfold SWmin; apply Rmult_lt_0_compat; [apply exp_pos|exact Pd0]).
  assert (HSWm : SWmin <= SW).
  { unfold SWmin. assert (exp (- Xi) * d0 <= K * d0c).
    { apply Rmult_le_compat; try lra. left. apply exp_pos. }
    lra. }
  set (Nx := sum2 P L (fun i j => W i j * v i j)) in *.
  set (Ax := sum2 P L (fun i j => W i j * Rabs (v i j))) in *.
  assert (HNx : Rabs Nx <= Ax).
  { unfold Nx, Ax. eapply Rle_trans; [apply sum2_abs|]. apply sum2_le. intros i j Hi Hj.
    rewrite Rabs_mult, (Rabs_pos_eq (W i j)) by (apply HWp; auto). lra. }
  assert (HD' : Rabs (Dh - SW) <= aD * SW + 0) by lra.
  assert (Hden : 0 < 1 - aD - 0 / SWmin) by (unfold Rdiv; rewrite Rmult_0_l; lra).
  pose proof (quot_sums Nh Dh Nx SW Ax aN bN eN aD 0 SWmin PSWm HSWm HNx PaN PbN PeN PaD
                (Rle_refl 0) HN HD' Hden) as QS.
  replace (0 / SWmin) with 0 in QS by (unfold Rdiv; ring).
  rewrite Rplus_0_r, Rminus_0_r in QS.
  assert (Hyt : Rabs (Nx / SW) <= Yq).
  { unfold Yq. replace (Nx / SW) with ((Nx / SW - y) + y) by ring.
    eapply Rle_trans; [apply Rabs_triang|]. lra. }
  assert (QS' : Rabs (Nh / Dh - Nx / SW) <= Es).
  { eapply Rle_trans; [exact QS|]. unfold Es. fold SWmin. unfold Rdiv.
    apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat; lra|].
    assert (aN * (Ax * / SW) <= aN * Aq) by (apply Rmult_le_compat_l; [lra|exact SM']).
    assert (aD * Rabs (Nx * / SW) <= aD * Yq) by (apply Rmult_le_compat_l; [lra|exact Hyt]).
    lra. }
  (* the tail *)
  destruct Ho as [th' [ze' [Eo [Hth Hze]]]].
  pose proof (tail_err o (Nh / Dh) (Nx / SW) Es th' th ze' ze QS' Hth Hze Eo) as TE.
  replace (o - y) with ((o - Nx / SW) + (Nx / SW - y)) by ring.
  eapply Rle_trans; [apply Rabs_triang|].
  assert (th * (Rabs (Nx / SW) + Es) <= th * (Yq + Es)) by (apply Rmult_le_compat_l; lra).
  lra.
Qed.

End Assemble.
