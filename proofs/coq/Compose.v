(** The composition steps of proofs/error_bound.md, as lemmas about real numbers:
    - [softmax_perturb] (lemma 4.7 with absolute terms): weights W_i = K p_i (1 + tau_i) + z_i
      against the exact softmax p_i. The perturbations enter against |v_i - y|, so a
      dominant token costs nothing for its weight's error, and the computed max cancels
      (it is in the common K).
    - [quot_sums] (lemma 5.5 with absolute terms): a computed numerator and denominator
      against sum W_i v_i / sum W_i.
    - [tail_err]: a last relative factor and absolute term.
    Tokens are indexed by partition p < P and position j < L p ([sum2]); V1 is P = 1. *)
From Coq Require Import Reals Lra Lia.
From Flocq Require Import Raux.
From PagedAttn Require Import Fp Sums Err.
Open Scope R_scope.

(** * Sums over the tokens of P partitions *)

Definition sum2 (P : nat) (L : nat -> nat) (f : nat -> nat -> R) : R :=
  sumn (fun p => sumn (f p) (L p)) P.

(** The number of tokens, as a real. *)
Definition ntok (P : nat) (L : nat -> nat) : R := sumn (fun p => INR (L p)) P.

Lemma sum2_ext : forall P L f g, (forall p j, (p < P)%nat -> (j < L p)%nat -> f p j = g p j) ->
  sum2 P L f = sum2 P L g.
Proof.
  intros P L f g H. unfold sum2. apply sumn_ext. intros p Hp. apply sumn_ext. intros j Hj.
  apply H; assumption.
Qed.

Lemma sum2_plus : forall P L f g, sum2 P L (fun p j => f p j + g p j) = sum2 P L f + sum2 P L g.
Proof.
  intros P L f g. unfold sum2. rewrite <- sumn_plus. apply sumn_ext. intros p _.
  apply sumn_plus.
Qed.

Lemma sum2_scal : forall P L c f, sum2 P L (fun p j => c * f p j) = c * sum2 P L f.
Proof.
  intros P L c f. unfold sum2. rewrite <- sumn_scal. apply sumn_ext. intros p _.
  apply sumn_scal.
Qed.

Lemma sum2_minus : forall P L f g, sum2 P L (fun p j => f p j - g p j) = sum2 P L f - sum2 P L g.
Proof.
  intros P L f g. unfold Rminus.
  replace (- sum2 P L g) with (-1 * sum2 P L g) by ring. rewrite <- sum2_scal, <- sum2_plus.
  apply sum2_ext. intros. ring.
Qed.

Lemma sum2_le : forall P L f g, (forall p j, (p < P)%nat -> (j < L p)%nat -> f p j <= g p j) ->
  sum2 P L f <= sum2 P L g.
Proof.
  intros P L f g H. unfold sum2. apply sumn_le. intros p Hp. apply sumn_le. intros j Hj.
  apply H; assumption.
Qed.

Lemma sum2_nonneg : forall P L f, (forall p j, (p < P)%nat -> (j < L p)%nat -> 0 <= f p j) ->
  0 <= sum2 P L f.
Proof.
  intros P L f H. unfold sum2. apply sumn_nonneg. intros p Hp. apply sumn_nonneg.
  intros j Hj. apply H; assumption.
Qed.

Lemma sum2_abs : forall P L f, Rabs (sum2 P L f) <= sum2 P L (fun p j => Rabs (f p j)).
Proof.
  intros P L f. unfold sum2. eapply Rle_trans; [apply sumn_abs|]. apply sumn_le.
  intros p _. apply sumn_abs.
Qed.

Lemma sum2_const : forall P L c, sum2 P L (fun _ _ => c) = ntok P L * c.
Proof.
  intros P L c. unfold sum2, ntok. rewrite <- (Rmult_comm c), <- sumn_scal.
  apply sumn_ext. intros p _. rewrite sumn_const. ring.
Qed.

Lemma ntok_nonneg : forall P L, 0 <= ntok P L.
Proof. intros P L. unfold ntok. apply sumn_nonneg. intros. apply pos_INR. Qed.

Lemma sum2_le_max : forall P L f M, (forall p j, (p < P)%nat -> (j < L p)%nat -> f p j <= M) ->
  sum2 P L f <= ntok P L * M.
Proof. intros P L f M H. rewrite <- sum2_const. apply sum2_le. exact H. Qed.

(** * exp of an argument error times a relative error *)

Lemma exp_m1_le : forall phi, Rabs (exp phi - 1) <= Rabs phi * exp (Rabs phi).
Proof.
  intros phi. pose proof (exp_pos phi). pose proof (Rabs_pos phi).
  assert (1 <= exp (Rabs phi)) by (rewrite <- exp_0; apply exp_mono; lra).
  destruct (Rle_dec 0 phi) as [Pp|Np].
  - rewrite (Rabs_pos_eq phi Pp) in *.
    assert (X1 : exp (- phi) >= 1 - phi) by (pose proof (exp_ineq1_le (- phi)); lra).
    assert (exp phi * exp (- phi) = 1)
      by (rewrite <- exp_plus; replace (phi + - phi) with 0 by ring; apply exp_0).
    assert (exp phi * (1 - phi) <= exp phi * exp (- phi)) by (apply Rmult_le_compat_l; lra).
    assert (1 <= exp phi) by (rewrite <- exp_0; apply exp_mono; lra).
    rewrite Rabs_pos_eq by lra. lra.
  - rewrite (Rabs_left phi) in * by lra.
    assert (exp phi <= 1) by (rewrite <- exp_0; apply exp_mono; lra).
    pose proof (exp_ineq1_le phi).
    rewrite Rabs_left1 by lra.
    assert (- phi <= - phi * exp (- phi)) by (rewrite <- (Rmult_1_r (- phi)) at 1; apply Rmult_le_compat_l; lra).
    lra.
Qed.

Lemma exp_tau : forall phi mu Pm Mm, Rabs phi <= Pm -> Rabs mu <= Mm ->
  Rabs (exp phi * (1 + mu) - 1) <= (Rabs phi + Rabs mu) * (exp Pm * (1 + Mm)).
Proof.
  intros phi mu Pm Mm Hp Hm.
  pose proof (Rabs_pos phi). pose proof (Rabs_pos mu).
  pose proof (exp_m1_le phi) as E1.
  assert (X : exp (Rabs phi) <= exp Pm) by (apply exp_mono; lra).
  assert (1 <= exp (Rabs phi)) by (rewrite <- exp_0; apply exp_mono; lra).
  replace (exp phi * (1 + mu) - 1) with ((exp phi - 1) * (1 + mu) + mu) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult.
  assert (R1 : Rabs (1 + mu) <= 1 + Mm).
  { eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_R1. lra. }
  assert (Rabs (exp phi - 1) * Rabs (1 + mu) <= Rabs phi * exp Pm * (1 + Mm)).
  { apply Rmult_le_compat; try apply Rabs_pos; [|exact R1].
    eapply Rle_trans; [exact E1|]. apply Rmult_le_compat_l; lra. }
  assert (1 <= exp Pm * (1 + Mm)) by nra.
  assert (Rabs mu <= Rabs mu * (exp Pm * (1 + Mm))) by nra.
  nra.
Qed.

(** * Lemma 4.7: perturbed softmax weights *)

Section Softmax.
Variables (P : nat) (L : nat -> nat) (p v W tau z T : nat -> nat -> R).
Variables (K Z Tm V y A ST SA : R).

Hypothesis Hp : forall i j, (i < P)%nat -> (j < L i)%nat -> 0 <= p i j.
Hypothesis Hsum : sum2 P L p = 1.
Hypothesis Hy : y = sum2 P L (fun i j => p i j * v i j).
Hypothesis HA : sum2 P L (fun i j => p i j * Rabs (v i j)) <= A.
Hypothesis HK : 0 < K.
Hypothesis HW : forall i j, (i < P)%nat -> (j < L i)%nat ->
  W i j = K * p i j * (1 + tau i j) + z i j.
Hypothesis HWp : forall i j, (i < P)%nat -> (j < L i)%nat -> 0 <= W i j.
Hypothesis Htau : forall i j, (i < P)%nat -> (j < L i)%nat -> Rabs (tau i j) <= T i j.
Hypothesis HTm : forall i j, (i < P)%nat -> (j < L i)%nat -> T i j <= Tm.
Hypothesis HTm0 : 0 <= Tm.
Hypothesis Hz : forall i j, (i < P)%nat -> (j < L i)%nat -> Rabs (z i j) <= Z.
Hypothesis HV : forall i j, (i < P)%nat -> (j < L i)%nat -> Rabs (v i j) <= V.
Hypothesis HST : sum2 P L (fun i j => p i j * T i j) <= ST.
Hypothesis HSA : sum2 P L (fun i j => p i j * T i j * Rabs (v i j - y)) <= SA.

Let SW := sum2 P L W.
Let d0 := 1 - ST - ntok P L * (Z / K).

Lemma sw_lower : SW >= K * d0.
Proof.
  unfold SW, d0.
  assert (E : SW = K * (1 + sum2 P L (fun i j => p i j * tau i j)) + sum2 P L z).
  { unfold SW. rewrite (sum2_ext P L W (fun i j => K * p i j + (K * (p i j * tau i j) + z i j)))
      by (intros; rewrite HW by assumption; ring).
    rewrite !sum2_plus, !sum2_scal, Hsum. ring. }
  fold SW. rewrite E.
  assert (T1 : Rabs (sum2 P L (fun i j => p i j * tau i j)) <= ST).
  { eapply Rle_trans; [apply sum2_abs|]. eapply Rle_trans; [|exact HST].
    apply sum2_le. intros i j Hi Hj. rewrite Rabs_mult, (Rabs_pos_eq (p i j)) by (apply Hp; auto).
    apply Rmult_le_compat_l; [apply Hp; auto|apply Htau; auto]. }
  assert (T2 : Rabs (sum2 P L z) <= ntok P L * Z).
  { eapply Rle_trans; [apply sum2_abs|]. apply sum2_le_max. intros; apply Hz; auto. }
  apply Rabs_le_inv in T1. apply Rabs_le_inv in T2.
  assert (K * (ntok P L * (Z / K)) = ntok P L * Z) by (field; lra).
  nra.
Qed.

Hypothesis Hd0 : 0 < d0.

Lemma sw_pos : 0 < SW.
Proof. pose proof sw_lower. nra. Qed.

(** |sum W v / sum W - y| <= (SA + (Z/K) sum_i |v_i - y|) / d0. *)
Lemma softmax_perturb :
  Rabs (sum2 P L (fun i j => W i j * v i j) / SW - y)
  <= (SA + Z / K * sum2 P L (fun i j => Rabs (v i j - y))) / d0.
Proof.
  pose proof sw_lower as Lo. pose proof sw_pos as Pos.
  assert (E : sum2 P L (fun i j => W i j * v i j) / SW - y
              = (K * sum2 P L (fun i j => p i j * tau i j * (v i j - y))
                 + sum2 P L (fun i j => z i j * (v i j - y))) / SW).
  { assert (Z0 : sum2 P L (fun i j => p i j * (v i j - y)) = 0).
    { rewrite (sum2_ext _ _ _ (fun i j => p i j * v i j - y * p i j)) by (intros; ring).
      rewrite sum2_minus, sum2_scal, Hsum, <- Hy. ring. }
    assert (E1 : sum2 P L (fun i j => W i j * v i j) - y * SW
                 = K * sum2 P L (fun i j => p i j * (v i j - y))
                   + K * sum2 P L (fun i j => p i j * tau i j * (v i j - y))
                   + sum2 P L (fun i j => z i j * (v i j - y))).
    { unfold SW. rewrite <- sum2_scal, <- !sum2_scal, <- !sum2_plus, <- sum2_minus.
      apply sum2_ext. intros i j Hi Hj. rewrite HW by assumption. ring. }
    rewrite Z0, Rmult_0_r, Rplus_0_l in E1.
    replace (sum2 P L (fun i j => W i j * v i j) / SW - y)
      with ((sum2 P L (fun i j => W i j * v i j) - y * SW) / SW) by (field; lra).
    rewrite E1. reflexivity. }
  rewrite E. unfold Rdiv. rewrite Rabs_mult, Rabs_inv, (Rabs_pos_eq SW) by lra.
  assert (N1 : Rabs (sum2 P L (fun i j => p i j * tau i j * (v i j - y))) <= SA).
  { eapply Rle_trans; [apply sum2_abs|]. eapply Rle_trans; [|exact HSA]. apply sum2_le.
    intros i j Hi Hj. rewrite !Rabs_mult, (Rabs_pos_eq (p i j)) by (apply Hp; auto).
    apply Rmult_le_compat_r; [apply Rabs_pos|].
    apply Rmult_le_compat_l; [apply Hp; auto|apply Htau; auto]. }
  assert (N2 : Rabs (sum2 P L (fun i j => z i j * (v i j - y)))
               <= Z * sum2 P L (fun i j => Rabs (v i j - y))).
  { eapply Rle_trans; [apply sum2_abs|]. rewrite <- sum2_scal. apply sum2_le.
    intros i j Hi Hj. rewrite Rabs_mult. apply Rmult_le_compat_r; [apply Rabs_pos|apply Hz; auto]. }
  assert (N : Rabs (K * sum2 P L (fun i j => p i j * tau i j * (v i j - y))
                    + sum2 P L (fun i j => z i j * (v i j - y)))
              <= K * SA + Z * sum2 P L (fun i j => Rabs (v i j - y))).
  { eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult, (Rabs_pos_eq K) by lra.
    assert (K * Rabs (sum2 P L (fun i j => p i j * tau i j * (v i j - y))) <= K * SA)
      by (apply Rmult_le_compat_l; lra).
    lra. }
  assert (Nn : 0 <= K * SA + Z * sum2 P L (fun i j => Rabs (v i j - y))).
  { pose proof (Rabs_pos (K * sum2 P L (fun i j => p i j * tau i j * (v i j - y))
                          + sum2 P L (fun i j => z i j * (v i j - y)))). lra. }
  apply Rle_trans with ((K * SA + Z * sum2 P L (fun i j => Rabs (v i j - y))) * / (K * d0)).
  - apply Rmult_le_compat; [apply Rabs_pos|left; apply Rinv_0_lt_compat; lra|exact N|].
    apply Rinv_le_contravar; [apply Rmult_lt_0_compat; lra|lra].
  - right. field. split; lra.
Qed.

(** sum W |v| / sum W <= (A (1 + Tm) + (Z/K) sum_i |v_i|) / d0. *)
Lemma softmax_mag :
  sum2 P L (fun i j => W i j * Rabs (v i j)) / SW
  <= (A * (1 + Tm) + Z / K * sum2 P L (fun i j => Rabs (v i j))) / d0.
Proof.
  pose proof sw_lower as Lo. pose proof sw_pos as Pos.
  assert (Ub : sum2 P L (fun i j => W i j * Rabs (v i j))
               <= K * (A * (1 + Tm)) + Z * sum2 P L (fun i j => Rabs (v i j))).
  { apply Rle_trans with (sum2 P L (fun i j => K * (p i j * Rabs (v i j) * (1 + Tm)) + Z * Rabs (v i j))).
    - apply sum2_le. intros i j Hi Hj. rewrite HW by assumption.
      pose proof (Rabs_pos (v i j)). pose proof (Hp i j Hi Hj).
      pose proof (Htau i j Hi Hj). pose proof (HTm i j Hi Hj). pose proof (Hz i j Hi Hj).
      apply Rabs_le_inv in H1. apply Rabs_le_inv in H3.
      assert (p i j * (1 + tau i j) <= p i j * (1 + Tm)) by (apply Rmult_le_compat_l; lra).
      assert (K * p i j * (1 + tau i j) * Rabs (v i j) <= K * (p i j * Rabs (v i j) * (1 + Tm))).
      { replace (K * p i j * (1 + tau i j) * Rabs (v i j)) with (K * (p i j * (1 + tau i j)) * Rabs (v i j)) by ring.
        replace (K * (p i j * Rabs (v i j) * (1 + Tm))) with (K * (p i j * (1 + Tm)) * Rabs (v i j)) by ring.
        apply Rmult_le_compat_r; [lra|]. apply Rmult_le_compat_l; lra. }
      assert (z i j * Rabs (v i j) <= Z * Rabs (v i j)) by (apply Rmult_le_compat_r; lra).
      lra.
    - rewrite (sum2_ext _ _ _ (fun i j => (K * (1 + Tm)) * (p i j * Rabs (v i j)) + Z * Rabs (v i j)))
        by (intros; ring).
      rewrite sum2_plus, !sum2_scal.
      assert (K * (1 + Tm) * sum2 P L (fun i j => p i j * Rabs (v i j)) <= K * (1 + Tm) * A)
        by (apply Rmult_le_compat_l; [apply Rmult_le_pos; lra|exact HA]).
      lra. }
  assert (Nn : 0 <= sum2 P L (fun i j => W i j * Rabs (v i j))).
  { apply sum2_nonneg. intros i j Hi Hj. apply Rmult_le_pos; [apply HWp; auto|apply Rabs_pos]. }
  apply Rle_trans with ((K * (A * (1 + Tm)) + Z * sum2 P L (fun i j => Rabs (v i j))) * / (K * d0)).
  - unfold Rdiv. apply Rmult_le_compat; [exact Nn|left; apply Rinv_0_lt_compat; lra|exact Ub|].
    apply Rinv_le_contravar; [apply Rmult_lt_0_compat; lra|lra].
  - right. field. split; lra.
Qed.

End Softmax.

(** * Lemma 5.5: the computed quotient against sum W v / sum W *)

Lemma quot_sums : forall Nh Dh Nx S Ax aN bN eN aD eD Smin,
  0 < Smin -> Smin <= S -> Rabs Nx <= Ax -> 0 <= aN -> 0 <= bN -> 0 <= eN -> 0 <= aD -> 0 <= eD ->
  Rabs (Nh - Nx) <= aN * Ax + bN * S + eN -> Rabs (Dh - S) <= aD * S + eD ->
  0 < 1 - aD - eD / Smin ->
  Rabs (Nh / Dh - Nx / S)
  <= (aN * (Ax / S) + bN + eN / Smin + (aD + eD / Smin) * Rabs (Nx / S)) / (1 - aD - eD / Smin).
Proof.
  intros Nh Dh Nx S Ax aN bN eN aD eD Smin Pm Hm HAx HaN HbN HeN HaD HeD HN HD Hden.
  assert (PS : 0 < S) by lra.
  assert (Q : eD / S <= eD / Smin).
  { unfold Rdiv. apply Rmult_le_compat_l; [lra|]. apply Rinv_le_contravar; lra. }
  assert (Q' : eN / S <= eN / Smin).
  { unfold Rdiv. apply Rmult_le_compat_l; [lra|]. apply Rinv_le_contravar; lra. }
  assert (PDh : S * (1 - aD - eD / Smin) <= Dh).
  { apply Rabs_le_inv in HD. assert (S * (eD / Smin) >= eD).
    { replace eD with (S * (eD / S)) at 2 by (field; lra). apply Rle_ge, Rmult_le_compat_l; lra. }
    nra. }
  assert (PD : 0 < Dh) by nra.
  set (yq := Nx / S).
  replace (Nh / Dh - yq) with (((Nh - Nx) - yq * (Dh - S)) / Dh) by (unfold yq; field; lra).
  assert (AD : forall a, Rabs (a / Dh) = Rabs a * / Dh).
  { intros a. unfold Rdiv. rewrite Rabs_mult, Rabs_inv, (Rabs_pos_eq Dh) by lra. reflexivity. }
  rewrite AD.
  assert (Num : Rabs ((Nh - Nx) - yq * (Dh - S))
                <= S * (aN * (Ax / S) + bN + eN / Smin + (aD + eD / Smin) * Rabs yq)).
  { replace ((Nh - Nx) - yq * (Dh - S)) with ((Nh - Nx) + (- (yq * (Dh - S)))) by ring.
    eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_Ropp, Rabs_mult.
    assert (Rabs yq * Rabs (Dh - S) <= Rabs yq * (aD * S + eD))
      by (apply Rmult_le_compat_l; [apply Rabs_pos|exact HD]).
    assert (E1 : S * (aN * (Ax / S)) = aN * Ax) by (field; lra).
    assert (S * (eN / Smin) >= eN).
    { replace eN with (S * (eN / S)) at 2 by (field; lra). apply Rle_ge, Rmult_le_compat_l; lra. }
    assert (S * (eD / Smin) >= eD).
    { replace eD with (S * (eD / S)) at 2 by (field; lra). apply Rle_ge, Rmult_le_compat_l; lra. }
    pose proof (Rabs_pos yq).
    assert (S * (eD / Smin) * Rabs yq >= eD * Rabs yq) by nra.
    nra. }
  set (R := aN * (Ax / S) + bN + eN / Smin + (aD + eD / Smin) * Rabs yq) in *.
  assert (PR : 0 <= R).
  { unfold R. pose proof (Rabs_pos Nx). pose proof (Rabs_pos yq).
    assert (0 <= Ax / S) by (apply Rmult_le_pos; [lra|left; apply Rinv_0_lt_compat; lra]).
    assert (0 <= eN / Smin) by (apply Rmult_le_pos; [lra|left; apply Rinv_0_lt_compat; lra]).
    assert (0 <= eD / Smin) by (apply Rmult_le_pos; [lra|left; apply Rinv_0_lt_compat; lra]).
    assert (0 <= aN * (Ax / S)) by (apply Rmult_le_pos; lra).
    assert (0 <= (aD + eD / Smin) * Rabs yq) by (apply Rmult_le_pos; lra).
    lra. }
  set (X := 1 - aD - eD / Smin) in *. clearbody X R.
  apply Rle_trans with (S * R * / (S * X)).
  - apply Rmult_le_compat; [apply Rabs_pos|left; apply Rinv_0_lt_compat; lra|exact Num|].
    apply Rinv_le_contravar; [apply Rmult_lt_0_compat; lra|lra].
  - right. field. split; lra.
Qed.

(** A last relative factor and absolute term on top of an error E. *)
Lemma tail_err : forall o q yt E th thm ze zm,
  Rabs (q - yt) <= E -> Rabs th <= thm -> Rabs ze <= zm ->
  o = q * (1 + th) + ze ->
  Rabs (o - yt) <= E + thm * (Rabs yt + E) + zm.
Proof.
  intros o q yt E th thm ze zm Hq Hth Hze ->.
  replace (q * (1 + th) + ze - yt) with ((q - yt) + q * th + ze) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. apply Rplus_le_compat; [|exact Hze].
  eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult.
  assert (Rabs q <= Rabs yt + E).
  { replace q with ((q - yt) + yt) by ring. eapply Rle_trans; [apply Rabs_triang|]. lra. }
  assert (Rabs q * Rabs th <= (Rabs yt + E) * thm) by (apply Rmult_le_compat; auto using Rabs_pos).
  lra.
Qed.
