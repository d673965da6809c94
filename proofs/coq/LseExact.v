(** Exact-arithmetic model of the split-KV partition state of
    kernels/include/pagedattn/lse_state.h (PartitionState::merge), its monoid laws, and the
    theorem that folding it over any contiguous split of the tokens, in any order or tree,
    gives the softmax-weighted sum.

    Modelling choices:
    - The header's empty state (-inf, 0, 0) is a separate constructor [Empty]: R has no
      -inf, and the header never computes with the -inf (merge returns the other operand
      when one is empty, and weight_at selects 0), so a constructor is exactly its meaning.
    - A non-empty state [St m s o] carries one output element [o]: the merge acts on every
      element of the output vector independently with the same weights, so one real per
      output element is the whole vector, element by element.
    - The header's [is_empty] is [s == 0] (a NaN s is a poisoned state, outside R); every
      state built here from tokens has s > 0 ([valid]), so [St] with s <= 0 never arises.
    - [merge] is the algebra; [merge_code] (end of file) is the header's code as written,
      with normalized weights and the clamp, and [merge_code_eq] proves them equal. *)
From Coq Require Import Reals List Permutation Lra Lia.
Import ListNotations.
Open Scope R_scope.

Inductive state : Type := Empty | St (m s o : R).

(** PartitionState::merge: M = max(m1, m2), w_i = s_i exp(m_i - M), s = w1 + w2,
    o = (w1 o1 + w2 o2) / s; an empty operand leaves the other unchanged. *)
Definition merge (a b : state) : state :=
  match a, b with
  | Empty, _ => b
  | _, Empty => a
  | St m1 s1 o1, St m2 s2 o2 =>
      let M := Rmax m1 m2 in
      let w1 := s1 * exp (m1 - M) in
      let w2 := s2 * exp (m2 - M) in
      St M (w1 + w2) ((w1 * o1 + w2 * o2) / (w1 + w2))
  end.

Definition valid (a : state) : Prop :=
  match a with Empty => True | St _ s _ => 0 < s end.

Definition out (a : state) : R := match a with Empty => 0 | St _ _ o => o end.

(** * Monoid laws *)

Theorem merge_empty_identity :
  forall a, merge Empty a = a /\ merge a Empty = a.
Proof. intros [|m s o]; split; reflexivity. Qed.

Theorem merge_comm : forall a b, merge a b = merge b a.
Proof.
  intros [|m1 s1 o1] [|m2 s2 o2]; try reflexivity.
  simpl. rewrite Rmax_comm.
  f_equal; [ring|].
  rewrite (Rplus_comm (s1 * _)). f_equal. ring.
Qed.

Lemma exp_minus : forall a b, exp (a - b) = exp a / exp b.
Proof.
  intros a b. unfold Rminus, Rdiv. rewrite exp_plus, exp_Ropp. reflexivity.
Qed.

Lemma exp_ne0 : forall x, exp x <> 0.
Proof. intros x. apply Rgt_not_eq, exp_pos. Qed.

Lemma valid_merge : forall a b, valid a -> valid b -> valid (merge a b).
Proof.
  intros [|m1 s1 o1] [|m2 s2 o2] Ha Hb; simpl in *; auto.
  pose proof (exp_pos (m1 - Rmax m1 m2)). pose proof (exp_pos (m2 - Rmax m1 m2)).
  nra.
Qed.

Theorem merge_assoc :
  forall a b c, valid a -> valid b -> valid c ->
  merge a (merge b c) = merge (merge a b) c.
Proof.
  intros [|m1 s1 o1] [|m2 s2 o2] [|m3 s3 o3] Ha Hb Hc; try reflexivity.
  simpl in Ha, Hb, Hc. unfold merge. rewrite Rmax_assoc.
  set (M := Rmax (Rmax m1 m2) m3).
  rewrite !exp_minus.
  set (M12 := Rmax m1 m2). set (M23 := Rmax m2 m3).
  assert (E1 := exp_pos m1). assert (E2 := exp_pos m2). assert (E3 := exp_pos m3).
  assert (EM := exp_pos M). assert (EM12 := exp_pos M12). assert (EM23 := exp_pos M23).
  set (e1 := exp m1) in *. set (e2 := exp m2) in *. set (e3 := exp m3) in *.
  set (eM := exp M) in *. set (eM12 := exp M12) in *. set (eM23 := exp M23) in *.
  assert (P1 : 0 < s1 * e1) by nra. assert (P2 : 0 < s2 * e2) by nra.
  assert (P3 : 0 < s3 * e3) by nra.
  f_equal; [field; lra|].
  field. repeat split; try lra; nra.
Qed.

(** * Denotation: a state stands for the two sums Z = s e^m and N = s e^m o. *)

Definition Zd (a : state) : R := match a with Empty => 0 | St m s _ => s * exp m end.
Definition Nd (a : state) : R := match a with Empty => 0 | St m s o => s * exp m * o end.

Lemma Zd_merge : forall a b, valid a -> valid b -> Zd (merge a b) = Zd a + Zd b.
Proof.
  intros [|m1 s1 o1] [|m2 s2 o2] Ha Hb; simpl; try ring.
  rewrite !exp_minus. field. apply exp_ne0.
Qed.

Lemma Nd_merge : forall a b, valid a -> valid b -> Nd (merge a b) = Nd a + Nd b.
Proof.
  intros [|m1 s1 o1] [|m2 s2 o2] Ha Hb; simpl in *; try ring.
  rewrite !exp_minus.
  assert (E1 := exp_pos m1). assert (E2 := exp_pos m2). assert (EM := exp_pos (Rmax m1 m2)).
  field. split; [apply exp_ne0|]. apply Rgt_not_eq.
  unfold Rdiv. apply Rplus_lt_0_compat; apply Rmult_lt_0_compat; auto;
    apply Rmult_lt_0_compat; auto; apply Rinv_0_lt_compat; auto.
Qed.

Lemma out_ZN : forall a, valid a -> a <> Empty -> out a = Nd a / Zd a.
Proof.
  intros [|m s o] Ha Hne; [congruence|]. simpl in *.
  assert (E := exp_pos m). field. split; [apply exp_ne0|lra].
Qed.

Lemma Zd_pos : forall a, valid a -> a <> Empty -> 0 < Zd a.
Proof.
  intros [|m s o] Ha Hne; [congruence|]. simpl in *.
  apply Rmult_lt_0_compat; [lra|apply exp_pos].
Qed.

(** * Tokens and partitions *)

(** A token is (logit x_i, value v_i) for one output element. *)
Definition token : Type := (R * R)%type.

Definition sumf (f : token -> R) (l : list token) : R :=
  fold_right (fun t acc => f t + acc) 0 l.

Lemma sumf_app : forall f l1 l2, sumf f (l1 ++ l2) = sumf f l1 + sumf f l2.
Proof. intros f l1 l2. induction l1 as [|t r IH]; simpl; [ring|]. rewrite IH. ring. Qed.

Lemma sumf_ext : forall f g l, (forall t, f t = g t) -> sumf f l = sumf g l.
Proof. intros f g l H. induction l as [|t r IH]; simpl; [reflexivity|]. rewrite H, IH. reflexivity. Qed.

Lemma sumf_scale : forall f c l, sumf f l * c = sumf (fun t => f t * c) l.
Proof. intros f c l. induction l as [|t r IH]; simpl; [ring|]. rewrite <- IH. ring. Qed.

Lemma sumf_perm : forall f l1 l2, Permutation l1 l2 -> sumf f l1 = sumf f l2.
Proof.
  intros f l1 l2 P. induction P; simpl; try reflexivity; try lra.
Qed.

Lemma sumf_nonneg : forall f l, (forall t, 0 <= f t) -> 0 <= sumf f l.
Proof. intros f l H. induction l as [|t r IH]; simpl; [lra|]. specialize (H t). lra. Qed.

Lemma sumf_pos : forall f l, (forall t, 0 < f t) -> l <> [] -> 0 < sumf f l.
Proof.
  intros f [|t r] H Hne; [congruence|]. simpl.
  pose proof (sumf_nonneg f r (fun t => Rlt_le _ _ (H t))). specialize (H t). lra.
Qed.

Lemma sumf_ge_in : forall f l t, (forall t, 0 <= f t) -> In t l -> f t <= sumf f l.
Proof.
  intros f l t H Hin. induction l as [|t' r IH]; [destruct Hin|]. simpl.
  destruct Hin as [<-|Hin].
  - pose proof (sumf_nonneg f r H). lra.
  - specialize (IH Hin). specialize (H t'). lra.
Qed.

(** The kernel's running max over a partition: m = max(x0, x1, ...). *)
Definition lmax (x0 : R) (r : list token) : R :=
  fold_left (fun acc t => Rmax acc (fst t)) r x0.

Lemma lmax_ge_acc : forall r x0, x0 <= lmax x0 r.
Proof.
  induction r as [|t r IH]; intros x0; simpl; [lra|].
  eapply Rle_trans; [apply Rmax_l|apply IH].
Qed.

Lemma lmax_ge : forall r x0 t, In t r -> fst t <= lmax x0 r.
Proof.
  induction r as [|t' r IH]; intros x0 t Hin; [destruct Hin|]. simpl.
  destruct Hin as [<-|Hin].
  - eapply Rle_trans; [apply Rmax_r|apply lmax_ge_acc].
  - apply IH, Hin.
Qed.

Lemma lmax_attained : forall r x0, lmax x0 r = x0 \/ exists t, In t r /\ fst t = lmax x0 r.
Proof.
  induction r as [|t r IH]; intros x0; simpl; [left; reflexivity|].
  destruct (IH (Rmax x0 (fst t))) as [H|[t' [Hin Ht']]].
  - rewrite H. destruct (Rle_dec x0 (fst t)).
    + right. exists t. split; [left; reflexivity|]. rewrite Rmax_right; auto.
    + left. rewrite Rmax_left; lra.
  - right. exists t'. split; [right; exact Hin|exact Ht'].
Qed.

(** The state one partition of the kernel computes: m = max x_i, s = sum exp(x_i - m),
    o = sum exp(x_i - m) v_i / s; an empty partition gives the empty state. *)
Definition of_tokens (l : list token) : state :=
  match l with
  | [] => Empty
  | (x0, _) :: r =>
      let m := lmax x0 r in
      let s := sumf (fun t => exp (fst t - m)) l in
      St m s (sumf (fun t => exp (fst t - m) * snd t) l / s)
  end.

Definition expx (t : token) : R := exp (fst t).
Definition expxv (t : token) : R := exp (fst t) * snd t.

Lemma valid_of_tokens : forall l, valid (of_tokens l).
Proof.
  intros [|[x0 v0] r]; simpl; [exact I|].
  pose proof (sumf_nonneg (fun t => exp (fst t - lmax x0 r)) r (fun t => Rlt_le _ _ (exp_pos _))).
  pose proof (exp_pos (x0 - lmax x0 r)). simpl in *. lra.
Qed.

Lemma Zd_of_tokens : forall l, Zd (of_tokens l) = sumf expx l.
Proof.
  intros [|[x0 v0] r]; [reflexivity|]. unfold of_tokens. cbv zeta. unfold Zd.
  rewrite sumf_scale. apply sumf_ext. intros t. unfold expx.
  rewrite <- exp_plus. f_equal. ring.
Qed.

Lemma Nd_of_tokens : forall l, Nd (of_tokens l) = sumf expxv l.
Proof.
  intros [|[x0 v0] r]; [reflexivity|]. unfold of_tokens. cbv zeta. unfold Nd.
  pose proof (valid_of_tokens ((x0, v0) :: r)) as V. simpl in V.
  set (m := lmax x0 r) in *.
  transitivity (sumf (fun t => exp (fst t - m) * snd t) ((x0, v0) :: r) * exp m).
  - cbn [sumf fold_right fst snd] in *.
    set (S := exp (x0 - m) + _) in *. field. lra.
  - rewrite sumf_scale. apply sumf_ext. intros t. unfold expxv.
    replace (exp (fst t)) with (exp (fst t - m) * exp m) by (rewrite <- exp_plus; f_equal; ring).
    ring.
Qed.

(** The softmax-weighted sum: sum_i exp(x_i) v_i / sum_i exp(x_i). *)
Definition softmax (l : list token) : R := sumf expxv l / sumf expx l.

Lemma softmax_perm : forall l1 l2, Permutation l1 l2 -> softmax l1 = softmax l2.
Proof.
  intros l1 l2 P. unfold softmax. rewrite (sumf_perm _ _ _ P), (sumf_perm expx _ _ P).
  reflexivity.
Qed.

Lemma expx_pos : forall t, 0 < expx t.
Proof. intros t. apply exp_pos. Qed.

(** * Any reduction tree over the partitions *)

(** A binary tree whose leaves are partitions (lists of tokens); [eval] merges the two
    subtrees' states at every node. A left fold, a right fold, the V2 reduce and any
    pairwise tree are all instances. *)
Inductive tree : Type := Leaf (p : list token) | Node (l r : tree).

Fixpoint leaves (t : tree) : list (list token) :=
  match t with Leaf p => [p] | Node l r => leaves l ++ leaves r end.

Fixpoint eval (t : tree) : state :=
  match t with Leaf p => of_tokens p | Node l r => merge (eval l) (eval r) end.

Lemma valid_eval : forall t, valid (eval t).
Proof.
  induction t; simpl; [apply valid_of_tokens|]. apply valid_merge; assumption.
Qed.

Lemma Zd_eval : forall t, Zd (eval t) = sumf expx (concat (leaves t)).
Proof.
  induction t as [p|l IHl r IHr]; simpl.
  - rewrite app_nil_r. apply Zd_of_tokens.
  - rewrite Zd_merge by apply valid_eval. rewrite concat_app, sumf_app, IHl, IHr.
    reflexivity.
Qed.

Lemma Nd_eval : forall t, Nd (eval t) = sumf expxv (concat (leaves t)).
Proof.
  induction t as [p|l IHl r IHr]; simpl.
  - rewrite app_nil_r. apply Nd_of_tokens.
  - rewrite Nd_merge by apply valid_eval. rewrite concat_app, sumf_app, IHl, IHr.
    reflexivity.
Qed.

Lemma out_softmax_of_sums :
  forall a l, valid a -> Zd a = sumf expx l -> Nd a = sumf expxv l -> l <> [] ->
  a <> Empty /\ out a = softmax l.
Proof.
  intros a l V HZ HN Hne.
  assert (P : 0 < sumf expx l) by (apply sumf_pos; [apply expx_pos|exact Hne]).
  assert (NE : a <> Empty) by (intros ->; simpl in HZ; lra).
  split; [exact NE|]. rewrite out_ZN by assumption. rewrite HZ, HN. reflexivity.
Qed.

(** Folding the merge over any tree whose leaves, read left to right, are the tokens cut
    into contiguous partitions in any order (any permutation of the tokens, in fact),
    gives the softmax-weighted sum. *)
Theorem fold_partitions_softmax :
  forall (t : tree) (toks : list token),
  Permutation (concat (leaves t)) toks -> toks <> [] ->
  eval t <> Empty /\ out (eval t) = softmax toks.
Proof.
  intros t toks P Hne.
  rewrite <- (softmax_perm _ _ P).
  apply out_softmax_of_sums; [apply valid_eval|apply Zd_eval|apply Nd_eval|].
  intros E. rewrite E in P. apply Permutation_nil in P. congruence.
Qed.

(** The same for the left fold the reduce performs, starting from the empty state. *)
Definition fold_states (ps : list (list token)) : state :=
  fold_left (fun acc p => merge acc (of_tokens p)) ps Empty.

Lemma fold_states_sums :
  forall ps acc, valid acc ->
  let r := fold_left (fun acc p => merge acc (of_tokens p)) ps acc in
  valid r /\ Zd r = Zd acc + sumf expx (concat ps) /\ Nd r = Nd acc + sumf expxv (concat ps).
Proof.
  induction ps as [|p ps IH]; intros acc V; simpl.
  - repeat split; auto; ring.
  - assert (V' : valid (merge acc (of_tokens p))) by (apply valid_merge; auto; apply valid_of_tokens).
    destruct (IH _ V') as [H1 [H2 H3]]. split; [exact H1|].
    rewrite H2, H3, Zd_merge, Nd_merge, Zd_of_tokens, Nd_of_tokens, !sumf_app
      by (auto; apply valid_of_tokens).
    split; ring.
Qed.

Theorem fold_partitions_softmax_left :
  forall (ps : list (list token)) (toks : list token),
  Permutation (concat ps) toks -> toks <> [] ->
  fold_states ps <> Empty /\ out (fold_states ps) = softmax toks.
Proof.
  intros ps toks P Hne. rewrite <- (softmax_perm _ _ P).
  destruct (fold_states_sums ps Empty I) as [V [HZ HN]].
  simpl in HZ, HN. rewrite Rplus_0_l in HZ, HN.
  apply out_softmax_of_sums; auto.
  intros E. rewrite E in P. apply Permutation_nil in P. congruence.
Qed.

(** * V2 = V1 *)

(** V2 cuts the tokens into partitions of [n] tokens (the last one shorter). *)
Fixpoint chunks_fuel (fuel n : nat) (l : list token) : list (list token) :=
  match fuel with
  | O => []
  | S f => match l with [] => [] | _ => firstn n l :: chunks_fuel f n (skipn n l) end
  end.

Definition chunks (n : nat) (l : list token) : list (list token) := chunks_fuel (length l) n l.

Lemma concat_chunks_fuel :
  forall fuel n l, (0 < n)%nat -> (length l <= fuel)%nat -> concat (chunks_fuel fuel n l) = l.
Proof.
  induction fuel as [|f IH]; intros n l Hn Hl.
  - destruct l; [reflexivity|simpl in Hl; lia].
  - destruct l as [|t r]; [reflexivity|].
    cbn [chunks_fuel concat]. rewrite IH; [apply firstn_skipn|exact Hn|].
    rewrite skipn_length. destruct n as [|n]; [lia|]. simpl in *. lia.
Qed.

Lemma concat_chunks : forall n l, (0 < n)%nat -> concat (chunks n l) = l.
Proof. intros n l Hn. apply concat_chunks_fuel; auto. Qed.

(** V1: one partition holding every token. V2: partitions of [n] tokens, merged by the
    reduce (left fold). Equal for every partition size. *)
Definition v1 (toks : list token) : R := out (of_tokens toks).
Definition v2 (n : nat) (toks : list token) : R := out (fold_states (chunks n toks)).

Corollary v2_eq_v1 :
  forall n toks, (0 < n)%nat -> toks <> [] -> v2 n toks = v1 toks.
Proof.
  intros n toks Hn Hne. unfold v1, v2.
  destruct (fold_partitions_softmax_left (chunks n toks) toks) as [_ ->].
  - rewrite concat_chunks by exact Hn. apply Permutation_refl.
  - exact Hne.
  - destruct (fold_partitions_softmax (Leaf toks) toks) as [_ H]; auto.
    simpl. rewrite app_nil_r. apply Permutation_refl.
Qed.

(** * The exact max makes every denominator at least 1 *)

(** Every state the kernel and the reduce form has s >= 1: the max logit's own term is
    exp(0) = 1 inside a partition, and a merge's M is one operand's m, whose weight is
    then its s >= 1 times exp(0). So the division o = (...)/s needs no epsilon. *)
Definition ge1 (a : state) : Prop := match a with Empty => True | St _ s _ => 1 <= s end.

Lemma ge1_of_tokens : forall l, ge1 (of_tokens l).
Proof.
  intros [|[x0 v0] r]; simpl; [exact I|].
  set (m := lmax x0 r).
  assert (NN : forall t : token, 0 <= exp (fst t - m)) by (intros; apply Rlt_le, exp_pos).
  pose proof (sumf_nonneg (fun t => exp (fst t - m)) r NN).
  destruct (lmax_attained r x0) as [Hx|[t [Hin Ht]]].
  - fold m in Hx.
    replace (exp (x0 - m)) with 1
      by (rewrite Hx; unfold Rminus; rewrite Rplus_opp_r, exp_0; reflexivity).
    simpl in *. lra.
  - pose proof (sumf_ge_in (fun t => exp (fst t - m)) r t NN Hin) as G. simpl in G.
    fold m in Ht.
    replace (exp (fst t - m)) with 1 in G
      by (rewrite Ht; unfold Rminus; rewrite Rplus_opp_r, exp_0; reflexivity).
    pose proof (exp_pos (x0 - m)). simpl in *. lra.
Qed.

Lemma ge1_merge : forall a b, ge1 a -> ge1 b -> ge1 (merge a b).
Proof.
  intros [|m1 s1 o1] [|m2 s2 o2] Ha Hb; simpl in *; auto.
  destruct (Rle_dec m1 m2) as [L|L].
  - rewrite Rmax_right by exact L. pose proof (exp_pos (m1 - m2)).
    replace (exp (m2 - m2)) with 1 by (unfold Rminus; rewrite Rplus_opp_r, exp_0; reflexivity).
    nra.
  - rewrite Rmax_left by lra. pose proof (exp_pos (m2 - m1)).
    replace (exp (m1 - m1)) with 1 by (unfold Rminus; rewrite Rplus_opp_r, exp_0; reflexivity).
    nra.
Qed.

Theorem denominator_ge_one :
  forall t, match eval t with Empty => True | St _ s _ => 1 <= s end.
Proof.
  intros t. change (ge1 (eval t)). induction t; simpl; [apply ge1_of_tokens|].
  apply ge1_merge; assumption.
Qed.

Theorem denominator_ge_one_left :
  forall ps, match fold_states ps with Empty => True | St _ s _ => 1 <= s end.
Proof.
  intros ps. change (ge1 (fold_states ps)). unfold fold_states.
  assert (G : ge1 Empty) by exact I. revert G. generalize Empty.
  induction ps as [|p ps IH]; intros acc G; simpl; [exact G|].
  apply IH, ge1_merge; [exact G|apply ge1_of_tokens].
Qed.

(** * Shift invariance *)

Definition shift_tok (c : R) (t : token) : token := (fst t + c, snd t).

Fixpoint tree_shift (c : R) (t : tree) : tree :=
  match t with
  | Leaf p => Leaf (map (shift_tok c) p)
  | Node l r => Node (tree_shift c l) (tree_shift c r)
  end.

Definition shift_state (c : R) (a : state) : state :=
  match a with Empty => Empty | St m s o => St (m + c) s o end.

Lemma Rmax_plus_r : forall a b c, Rmax (a + c) (b + c) = Rmax a b + c.
Proof. intros a b c. unfold Rmax. destruct (Rle_dec a b), (Rle_dec (a + c) (b + c)); lra. Qed.

Lemma lmax_shift : forall c r x0, lmax (x0 + c) (map (shift_tok c) r) = lmax x0 r + c.
Proof.
  intros c. induction r as [|t r IH]; intros x0; simpl; [reflexivity|].
  rewrite Rmax_plus_r. apply IH.
Qed.

Lemma sumf_map : forall f g l, sumf f (map g l) = sumf (fun t => f (g t)) l.
Proof. intros f g l. induction l as [|t r IH]; simpl; [reflexivity|]. rewrite IH. reflexivity. Qed.

Lemma of_tokens_shift :
  forall c l, of_tokens (map (shift_tok c) l) = shift_state c (of_tokens l).
Proof.
  intros c [|[x0 v0] r]; [reflexivity|].
  change (map (shift_tok c) ((x0, v0) :: r)) with ((x0 + c, v0) :: map (shift_tok c) r).
  unfold of_tokens. cbv zeta. rewrite lmax_shift. unfold shift_state.
  change ((x0 + c, v0) :: map (shift_tok c) r) with (map (shift_tok c) ((x0, v0) :: r)).
  rewrite !sumf_map.
  assert (E : forall t : token, fst (shift_tok c t) - (lmax x0 r + c) = fst t - lmax x0 r)
    by (intros; simpl; ring).
  f_equal; [apply sumf_ext; intros; rewrite E; reflexivity|].
  f_equal; apply sumf_ext; intros t; rewrite E; reflexivity.
Qed.

Lemma merge_shift :
  forall c a b, merge (shift_state c a) (shift_state c b) = shift_state c (merge a b).
Proof.
  intros c [|m1 s1 o1] [|m2 s2 o2]; try reflexivity. simpl.
  rewrite Rmax_plus_r.
  replace (m1 + c - (Rmax m1 m2 + c)) with (m1 - Rmax m1 m2) by ring.
  replace (m2 + c - (Rmax m1 m2 + c)) with (m2 - Rmax m1 m2) by ring.
  reflexivity.
Qed.

(** Adding a constant c to every logit (ALiBi's per-row constant, or any other) moves
    the max by c and leaves s and o exactly as they were, in every partition and after
    every merge of any tree. *)
Theorem shift_invariance :
  forall c t, eval (tree_shift c t) = shift_state c (eval t) /\
              out (eval (tree_shift c t)) = out (eval t).
Proof.
  intros c t.
  assert (H : eval (tree_shift c t) = shift_state c (eval t)).
  { induction t as [p|l IHl r IHr]; simpl; [apply of_tokens_shift|].
    rewrite IHl, IHr. apply merge_shift. }
  split; [exact H|]. rewrite H. destruct (eval t); reflexivity.
Qed.

(** * Empty partitions *)

(** A partition with no tokens (a sequence shorter than the partition grid) gives the empty
    state, which changes nothing wherever it sits in the tree. *)
Theorem empty_partitions_neutral :
  forall t, of_tokens [] = Empty /\
            eval (Node (Leaf []) t) = eval t /\ eval (Node t (Leaf [])) = eval t.
Proof. intros t. split; [reflexivity|]. simpl. apply merge_empty_identity. Qed.

(** * The code as written: normalized weights, the clamp, and the two-pass reduce *)

(** [PartitionState::merge] (lse_state.h) does not divide w1 o1 + w2 o2 by s: it forms the
    normalized weights a_i = w_i / s, then x = a1 o1 + a2 o2, then clamps x to
    [lo, hi] = [min(o1, o2), max(o1, o2)] by comparisons. [merge_code] is that code, line
    by line ([lo2], [hi2] and [clamp] are its conditional expressions); [merge_code_eq]
    shows it is [merge] in exact arithmetic, so every theorem above is about it. *)
Definition clamp (lo hi x : R) : R :=
  if Rlt_dec x lo then lo else if Rlt_dec hi x then hi else x.
Definition lo2 (o1 o2 : R) : R := if Rlt_dec o1 o2 then o1 else o2.
Definition hi2 (o1 o2 : R) : R := if Rlt_dec o1 o2 then o2 else o1.

Definition merge_code (a b : state) : state :=
  match a, b with
  | _, Empty => a
  | Empty, _ => b
  | St m1 s1 o1, St m2 s2 o2 =>
      let M := Rmax m1 m2 in
      let w1 := s1 * exp (m1 - M) in
      let w2 := s2 * exp (m2 - M) in
      let s := w1 + w2 in
      let a1 := w1 / s in
      let a2 := w2 / s in
      St M s (clamp (lo2 o1 o2) (hi2 o1 o2) (a1 * o1 + a2 * o2))
  end.

Lemma clamp_id : forall lo hi x, lo <= x <= hi -> clamp lo hi x = x.
Proof.
  intros lo hi x [H1 H2]. unfold clamp.
  destruct (Rlt_dec x lo); [lra|]. destruct (Rlt_dec hi x); [lra|reflexivity].
Qed.

(** The exact merge's output is a convex combination of o1 and o2. *)
Lemma convex_in : forall w1 w2 o1 o2, 0 <= w1 -> 0 <= w2 -> 0 < w1 + w2 ->
  lo2 o1 o2 <= (w1 * o1 + w2 * o2) / (w1 + w2) <= hi2 o1 o2.
Proof.
  intros w1 w2 o1 o2 H1 H2 Hs.
  set (p := w2 / (w1 + w2)).
  assert (E : (w1 * o1 + w2 * o2) / (w1 + w2) = o1 + p * (o2 - o1)) by (unfold p; field; lra).
  assert (P0 : 0 <= p) by (unfold p; apply Rmult_le_pos; [lra|left; apply Rinv_0_lt_compat; lra]).
  assert (P1 : p <= 1).
  { unfold p. apply (Rmult_le_reg_r (w1 + w2)); [lra|].
    unfold Rdiv. rewrite Rmult_assoc, Rinv_l by lra. lra. }
  rewrite E. unfold lo2, hi2. destruct (Rlt_dec o1 o2); split; nra.
Qed.

Theorem merge_code_eq : forall a b, valid a -> valid b -> merge_code a b = merge a b.
Proof.
  intros [|m1 s1 o1] [|m2 s2 o2] Ha Hb; simpl in *; try reflexivity.
  set (M := Rmax m1 m2).
  set (w1 := s1 * exp (m1 - M)). set (w2 := s2 * exp (m2 - M)).
  assert (P1 : 0 < w1) by (apply Rmult_lt_0_compat; [lra|apply exp_pos]).
  assert (P2 : 0 < w2) by (apply Rmult_lt_0_compat; [lra|apply exp_pos]).
  assert (E : w1 / (w1 + w2) * o1 + w2 / (w1 + w2) * o2 = (w1 * o1 + w2 * o2) / (w1 + w2))
    by (field; lra).
  rewrite E, clamp_id; [reflexivity|]. apply convex_in; lra.
Qed.

(** The V2 reduce ([WeightedSum] in lse_state.h, kernels/src/reduce_kernel.cuh) does not fold
    merges: it takes a reference max M (the kernel's is the exact max of the partitions' m),
    weighs each state by w_p = s_p exp(m_p - M) ([weight_at]: an empty state weighs 0), and
    returns sum_p w_p o_p / sum_p w_p, or 0 when the total is 0 ([normalized]). The code
    skips weights that are 0, which changes no exact sum. *)
Definition wt (M : R) (a : state) : R := match a with Empty => 0 | St m s _ => s * exp (m - M) end.
Definition wto (M : R) (a : state) : R := match a with Empty => 0 | St m s o => s * exp (m - M) * o end.
Definition sumst (f : state -> R) (l : list state) : R := fold_right (fun a acc => f a + acc) 0 l.

Definition weighted_sum (M : R) (l : list state) : R :=
  let total := sumst (wt M) l in
  if Req_EM_T total 0 then 0 else sumst (wto M) l / total.

Lemma fold_merge_sums : forall l acc, valid acc -> Forall valid l ->
  let r := fold_left merge l acc in
  valid r /\ Zd r = Zd acc + sumst Zd l /\ Nd r = Nd acc + sumst Nd l.
Proof.
  induction l as [|a l IH]; intros acc V Fl; simpl.
  - repeat split; auto; ring.
  - inversion Fl as [|? ? Va Fl']; subst.
    destruct (IH (merge acc a) (valid_merge _ _ V Va) Fl') as [H1 [H2 H3]].
    split; [exact H1|]. rewrite H2, H3, Zd_merge, Nd_merge by assumption. split; ring.
Qed.

Lemma sumst_scale : forall f g c l, (forall a, g a = f a * c) -> sumst g l = sumst f l * c.
Proof. intros f g c l H. induction l; simpl; [ring|]. rewrite H, IHl. ring. Qed.

(** The two-pass weighted sum is the left fold of [merge] (so, by [fold_merge_sums] and the
    fold theorem, softmax . v), for every reference M: the factor exp(-M) cancels. *)
Theorem weighted_sum_eq_fold : forall M l, Forall valid l ->
  weighted_sum M l = out (fold_left merge l Empty).
Proof.
  intros M l Fl. destruct (fold_merge_sums l Empty I Fl) as [V [HZ HN]].
  simpl in HZ, HN. rewrite Rplus_0_l in HZ, HN.
  assert (SW : sumst (wt M) l = sumst Zd l * exp (- M)).
  { apply sumst_scale. intros [|m s o]; simpl; [ring|].
    replace (m - M) with (m + - M) by ring. rewrite exp_plus. ring. }
  assert (SN : sumst (wto M) l = sumst Nd l * exp (- M)).
  { apply sumst_scale. intros [|m s o]; simpl; [ring|].
    replace (m - M) with (m + - M) by ring. rewrite exp_plus. ring. }
  unfold weighted_sum. rewrite SW, SN.
  set (r := fold_left merge l Empty) in *.
  destruct (Req_EM_T (sumst Zd l * exp (- M)) 0) as [Z|NZ].
  - assert (Z0 : Zd r = 0).
    { rewrite HZ. destruct (Rmult_integral _ _ Z) as [Z'|Z']; [exact Z'|].
      exfalso. apply (exp_ne0 (- M)), Z'. }
    destruct r as [|m s o]; [reflexivity|]. simpl in Z0, V.
    exfalso. pose proof (exp_pos m). nra.
  - assert (Ne : r <> Empty) by (intros E; rewrite E in HZ; simpl in HZ; apply NZ; rewrite <- HZ; ring).
    rewrite (out_ZN r V Ne), HZ, HN. field. split; [|apply exp_ne0].
    intros Z. apply NZ. rewrite Z. ring.
Qed.

(** The reduce over the partitions' states gives softmax . v, at any reference M. *)
Corollary weighted_sum_softmax : forall M (ps : list (list token)) (toks : list token),
  Permutation (concat ps) toks -> toks <> [] ->
  weighted_sum M (map of_tokens ps) = softmax toks.
Proof.
  intros M ps toks P Hne.
  assert (Fv : Forall valid (map of_tokens ps)).
  { apply Forall_forall. intros a Ha. apply in_map_iff in Ha.
    destruct Ha as [p [<- _]]. apply valid_of_tokens. }
  rewrite weighted_sum_eq_fold by exact Fv.
  replace (fold_left merge (map of_tokens ps) Empty) with (fold_states ps).
  - exact (proj2 (fold_partitions_softmax_left ps toks P Hne)).
  - unfold fold_states. clear. generalize Empty.
    induction ps as [|p ps IH]; intros acc; simpl; [reflexivity|apply IH].
Qed.
