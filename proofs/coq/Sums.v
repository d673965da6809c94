(** The kernels' fixed summation trees (kernels/src/attention_kernel.cuh,
    kernels/src/warp_reduce.cuh) and the rounding error of any such tree.

    A tree [tr] has exact leaves [Lf x] (a float already computed: an exp, a 0 that starts a
    chain), fma nodes [Fm a b t] = rnd(a * b + t) and addition nodes [Ad l r] = rnd(l + r).
    [tree_err]: a tree of height h (the most roundings any term goes through) with f fma
    nodes computes its exact sum within
      ((1 + u)^h - 1) * (sum of the terms' magnitudes) + f * eta * (1 + u)^h;
    additions of floats need no absolute term (Fp.rnd_plus), fma results may underflow.

    The kernels' trees, built from their loops:
    - [tree_dot]: q.k of one token: lane g of the token's GROUP = 2^lg lanes runs
      dot = fmaf(q_d, k_d, dot) over the d with (d / VEC) mod GROUP = g, in increasing d,
      then group_sum<GROUP>, a butterfly ([bfly]): height D / GROUP + lg ([tree_dot_ht]).
    - [tree_s]: the exp-sum of a partition of L tokens: thread t adds e_i for
      i = t, t + T, ... (T = NW * 2^lw threads), group_sum<WARP> (lw levels), then
      s = red[0] + red[1] + ... over the NW warps ([wchain]): height
      ceil(L / T) + lw + NW - 1 ([tree_s_ht]).
    - [tree_o]: the P.V sum of one output element: the lane of warp w and chunk c runs
      acc = fmaf(p_i, v_i, acc) over the tokens i of the blocks w, w + NW, ... whose
      in-block slot is in chunk c (V_T slots each), in increasing i; group_sum over the
      R = 2^lr lanes of the row; then the NW warps in order: height
      V_T * ceil(ceil(L / B) / NW) + lr + NW - 1 ([tree_o_ht]).
    - [chain]: the rare path's one sequential fmaf chain over the partition's L tokens
      (height L).
    Each tree sums every term exactly once ([tree_s_sum], [tree_o_sum], [tree_dot_sum]). *)
From Coq Require Import Bool Reals List Lra Lia.
Import ListNotations.
From PagedAttn Require Import Fp.
Open Scope R_scope.

(** * Finite sums *)

Fixpoint sumn (f : nat -> R) (n : nat) : R :=
  match n with O => 0 | S k => sumn f k + f k end.

Lemma sumn_ext : forall f g n, (forall i, (i < n)%nat -> f i = g i) -> sumn f n = sumn g n.
Proof.
  intros f g n H. induction n as [|n IH]; simpl; [reflexivity|].
  rewrite IH by (intros; apply H; lia). rewrite H by lia. reflexivity.
Qed.

Lemma sumn_plus : forall f g n, sumn (fun i => f i + g i) n = sumn f n + sumn g n.
Proof. intros f g n. induction n; simpl; [ring|]. rewrite IHn. ring. Qed.

Lemma sumn_scal : forall c f n, sumn (fun i => c * f i) n = c * sumn f n.
Proof. intros c f n. induction n; simpl; [ring|]. rewrite IHn. ring. Qed.

Lemma sumn_minus : forall f g n, sumn (fun i => f i - g i) n = sumn f n - sumn g n.
Proof. intros f g n. induction n; simpl; [ring|]. rewrite IHn. ring. Qed.

Lemma sumn_le : forall f g n, (forall i, (i < n)%nat -> f i <= g i) -> sumn f n <= sumn g n.
Proof.
  intros f g n H. induction n; simpl; [lra|].
  assert (sumn f n <= sumn g n) by (apply IHn; intros; apply H; lia).
  assert (f n <= g n) by (apply H; lia). lra.
Qed.

Lemma sumn_nonneg : forall f n, (forall i, (i < n)%nat -> 0 <= f i) -> 0 <= sumn f n.
Proof.
  intros f n H. replace 0 with (sumn (fun _ => 0) n).
  - apply sumn_le. exact H.
  - induction n; simpl; [reflexivity|]. rewrite IHn by (intros; apply H; lia). ring.
Qed.

Lemma sumn_const : forall c n, sumn (fun _ => c) n = INR n * c.
Proof. intros c n. induction n; simpl sumn; [simpl; ring|]. rewrite IHn, S_INR. ring. Qed.

Lemma sumn_abs : forall f n, Rabs (sumn f n) <= sumn (fun i => Rabs (f i)) n.
Proof.
  intros f n. induction n; simpl; [rewrite Rabs_R0; lra|].
  eapply Rle_trans; [apply Rabs_triang|]. lra.
Qed.

Lemma sumn_add : forall f a b, sumn f (a + b) = sumn f a + sumn (fun i => f (a + i)%nat) b.
Proof.
  intros f a b. induction b as [|b IH]; simpl.
  - rewrite Nat.add_0_r. ring.
  - rewrite Nat.add_succ_r. simpl. rewrite IH. ring.
Qed.

Lemma sumn_mul : forall f a b,
  sumn f (a * b) = sumn (fun x => sumn (fun y => f (x * b + y)%nat) b) a.
Proof.
  intros f a b. induction a as [|a IH]; simpl; [reflexivity|].
  replace (b + a * b)%nat with (a * b + b)%nat by lia.
  rewrite sumn_add, IH. reflexivity.
Qed.

Lemma sumn_swap : forall f a b,
  sumn (fun x => sumn (fun y => f x y) b) a = sumn (fun y => sumn (fun x => f x y) a) b.
Proof.
  intros f a b. induction a as [|a IH]; simpl.
  - induction b; simpl; [reflexivity|]. rewrite <- IHb. ring.
  - rewrite IH, <- sumn_plus. reflexivity.
Qed.

Lemma sumn_ge_term : forall f n k, (k < n)%nat -> (forall i, (i < n)%nat -> 0 <= f i) ->
  f k <= sumn f n.
Proof.
  intros f n. induction n as [|n IH]; intros k Hk Hf; [lia|]. simpl.
  destruct (Nat.eq_dec k n) as [->|N].
  - pose proof (sumn_nonneg f n ltac:(intros; apply Hf; lia)). lra.
  - pose proof (Hf n ltac:(lia)). pose proof (IH k ltac:(lia) ltac:(intros; apply Hf; lia)). lra.
Qed.

Lemma sumn_le_max : forall f n M, (forall i, (i < n)%nat -> f i <= M) ->
  sumn f n <= INR n * M.
Proof. intros f n M H. rewrite <- sumn_const. apply sumn_le. exact H. Qed.

(** Sums over a list of indices. *)
Definition lsum (f : nat -> R) (l : list nat) : R := fold_right (fun i acc => f i + acc) 0 l.

Lemma lsum_app : forall f l1 l2, lsum f (l1 ++ l2) = lsum f l1 + lsum f l2.
Proof. intros f l1 l2. induction l1; simpl; [ring|]. rewrite IHl1. ring. Qed.

Lemma lsum_seq : forall f a n, lsum f (seq a n) = sumn (fun i => f (a + i)%nat) n.
Proof.
  intros f a n. revert a. induction n as [|n IH]; intros a; [reflexivity|].
  rewrite seq_S, lsum_app, IH. simpl. ring.
Qed.

Lemma lsum_seq0 : forall f n, lsum f (seq 0 n) = sumn f n.
Proof. intros f n. rewrite lsum_seq. reflexivity. Qed.

Lemma lsum_ext : forall f g l, (forall i, In i l -> f i = g i) -> lsum f l = lsum g l.
Proof.
  intros f g l H. induction l as [|a l IH]; simpl; [reflexivity|].
  rewrite H by (left; reflexivity). rewrite IH by (intros; apply H; right; assumption).
  reflexivity.
Qed.

Lemma lsum_one : forall l, lsum (fun _ => 1) l = INR (length l).
Proof.
  induction l as [|a l IH]; simpl lsum; [reflexivity|]. rewrite IH. simpl length.
  rewrite S_INR. ring.
Qed.

(** Splitting a list by a key below T: the T filtered sublists sum to the whole. *)
Lemma lsum_partition : forall (h : nat -> nat) T f l, (forall i, In i l -> (h i < T)%nat) ->
  sumn (fun t => lsum f (filter (fun i => Nat.eqb (h i) t) l)) T = lsum f l.
Proof.
  intros h T f l. induction l as [|a l IH]; intros H; simpl.
  - rewrite sumn_const. ring.
  - transitivity (sumn (fun t => (if Nat.eqb (h a) t then f a else 0)
                          + lsum f (filter (fun i => Nat.eqb (h i) t) l)) T).
    + apply sumn_ext. intros t _. destruct (Nat.eqb (h a) t); simpl; ring.
    + rewrite sumn_plus, IH by (intros; apply H; right; assumption). f_equal.
      assert (Ha : (h a < T)%nat) by (apply H; left; reflexivity).
      clear - Ha. induction T as [|T IHT]; [lia|]. simpl.
      destruct (Nat.eq_dec (h a) T) as [E|E].
      * rewrite E, Nat.eqb_refl.
        replace (sumn _ T) with (sumn (fun _ => 0) T).
        { rewrite sumn_const. ring. }
        apply sumn_ext. intros i Hi. destruct (Nat.eqb_spec T i); [lia|reflexivity].
      * rewrite IHT by lia. destruct (Nat.eqb_spec (h a) T); [lia|]. ring.
Qed.

Lemma NoDup_map_inj : forall (f : nat -> nat) l, NoDup l ->
  (forall x y, In x l -> In y l -> f x = f y -> x = y) -> NoDup (map f l).
Proof.
  intros f l ND. induction ND as [|a l Na ND IH]; intros Inj; simpl; constructor.
  - intros Hin. apply in_map_iff in Hin. destruct Hin as [x [E Hx]].
    assert (x = a) by (apply Inj; [right; exact Hx|left; reflexivity|exact E]).
    subst. contradiction.
  - apply IH. intros x y Hx Hy E. apply Inj; [right; exact Hx|right; exact Hy|exact E].
Qed.

(** A list that an injective map sends below K is at most K long. *)
Lemma length_inj : forall (f : nat -> nat) l K, NoDup l ->
  (forall x y, In x l -> In y l -> f x = f y -> x = y) ->
  (forall x, In x l -> (f x < K)%nat) -> (length l <= K)%nat.
Proof.
  intros f l K ND Inj Bd.
  assert (NoDup (map f l)).
  { apply NoDup_map_inj; assumption. }
  rewrite <- (map_length f l), <- (seq_length K 0).
  apply NoDup_incl_length; [assumption|].
  intros y Hy. apply in_map_iff in Hy. destruct Hy as [x [<- Hx]].
  apply in_seq. split; [lia|]. simpl. apply Bd. exact Hx.
Qed.

Lemma NoDup_filter_seq : forall P a n, NoDup (filter P (seq a n)).
Proof. intros P a n. apply NoDup_filter, seq_NoDup. Qed.

Lemma in_filter_seq : forall P i n, In i (filter P (seq 0 n)) -> (i < n)%nat /\ P i = true.
Proof.
  intros P i n H. apply filter_In in H. destruct H as [H1 H2].
  apply in_seq in H1. split; [lia|exact H2].
Qed.

Lemma mulmod_unique : forall a b c d V, (b < V)%nat -> (d < V)%nat ->
  (a * V + b = c * V + d)%nat -> a = c /\ b = d.
Proof.
  intros a b c d V Hb Hd E. destruct (Nat.div_mod_unique V a c b d Hb Hd) as [X Y]; [lia|].
  split; assumption.
Qed.

Definition cdiv (a b : nat) : nat := ((a + b - 1) / b)%nat.

Lemma cdiv_ge : forall a b, (0 < b)%nat -> (a <= b * cdiv a b)%nat.
Proof.
  intros a b Hb. unfold cdiv.
  pose proof (Nat.div_mod (a + b - 1) b ltac:(lia)).
  pose proof (Nat.mod_upper_bound (a + b - 1) b ltac:(lia)). lia.
Qed.

Lemma div_lt_cdiv : forall i a b, (0 < b)%nat -> (i < a)%nat -> (i / b < cdiv a b)%nat.
Proof.
  intros i a b Hb Hi. apply Nat.div_lt_upper_bound; [lia|].
  pose proof (cdiv_ge a b Hb). lia.
Qed.

(** * Trees and their error *)

Inductive tr : Type := Lf (x : R) | Fm (a b : R) (t : tr) | Ad (l r : tr).

Fixpoint cv (t : tr) : R :=
  match t with Lf x => x | Fm a b t => rnd (a * b + cv t) | Ad l r => rnd (cv l + cv r) end.
Fixpoint xv (t : tr) : R :=
  match t with Lf x => x | Fm a b t => a * b + xv t | Ad l r => xv l + xv r end.
Fixpoint mv (t : tr) : R :=
  match t with Lf x => Rabs x | Fm a b t => Rabs (a * b) + mv t | Ad l r => mv l + mv r end.
Fixpoint ht (t : tr) : nat :=
  match t with Lf _ => O | Fm _ _ t => S (ht t) | Ad l r => S (Nat.max (ht l) (ht r)) end.
Fixpoint nf (t : tr) : nat :=
  match t with Lf _ => O | Fm _ _ t => S (nf t) | Ad l r => (nf l + nf r)%nat end.
Fixpoint lok (t : tr) : Prop :=
  match t with Lf x => fmtb x | Fm _ _ t => lok t | Ad l r => lok l /\ lok r end.

(** The relative growth of h roundings. *)
Definition g (h : nat) : R := (1 + u) ^ h - 1.

Lemma pow1u_ge1 : forall k, 1 <= (1 + u) ^ k.
Proof. intros k. apply pow_R1_Rle. pose proof u_pos. lra. Qed.

Lemma pow1u_mono : forall a b, (a <= b)%nat -> (1 + u) ^ a <= (1 + u) ^ b.
Proof. intros a b H. apply Rle_pow; [pose proof u_pos; lra|exact H]. Qed.

Lemma g_nonneg : forall h, 0 <= g h.
Proof. intros h. unfold g. pose proof (pow1u_ge1 h). lra. Qed.

Lemma g_mono : forall a b, (a <= b)%nat -> g a <= g b.
Proof. intros a b H. unfold g. pose proof (pow1u_mono a b H). lra. Qed.

Lemma g_S : forall h, g (S h) = (1 + g h) * (1 + u) - 1.
Proof. intros h. unfold g. simpl. ring. Qed.

Lemma mv_nonneg : forall t, 0 <= mv t.
Proof.
  induction t; simpl; try (pose proof (Rabs_pos x)); try (pose proof (Rabs_pos (a * b))); lra.
Qed.

Lemma xv_le_mv : forall t, Rabs (xv t) <= mv t.
Proof.
  induction t; simpl; [lra| |];
    (eapply Rle_trans; [apply Rabs_triang|]); lra.
Qed.

Lemma cv_fmtb : forall t, lok t -> fmtb (cv t).
Proof. intros [x|a b t|l r] H; simpl in *; [exact H|apply fmtb_rnd|apply fmtb_rnd]. Qed.

Theorem tree_err : forall t, lok t ->
  Rabs (cv t - xv t) <= g (ht t) * mv t + INR (nf t) * eta * (1 + u) ^ ht t.
Proof.
  induction t as [x|a b t IH|l IHl r IHr]; intros Hok; cbn [cv xv mv ht nf lok] in *.
  - replace (x - x) with 0 by ring. rewrite Rabs_R0. unfold g. simpl. lra.
  - specialize (IH Hok). pose proof u_pos. pose proof eta_pos.
    destruct (rnd_err (a * b + cv t)) as [d [e [Hd [He [_ E]]]]]. rewrite E.
    set (E1 := cv t - xv t) in *.
    replace ((a * b + cv t) * (1 + d) + e - (a * b + xv t))
      with (d * (a * b) + E1 * (1 + d) + d * xv t + e) by (unfold E1; ring).
    pose proof (xv_le_mv t). pose proof (mv_nonneg t). pose proof (g_nonneg (ht t)).
    pose proof (pow1u_ge1 (ht t)). pose proof (pos_INR (nf t)).
    assert (B1 : Rabs (d * (a * b)) <= u * Rabs (a * b))
      by (rewrite Rabs_mult; apply Rmult_le_compat_r; [apply Rabs_pos|exact Hd]).
    assert (B2 : Rabs (E1 * (1 + d)) <= Rabs E1 * (1 + u)).
    { rewrite Rabs_mult. apply Rmult_le_compat_l; [apply Rabs_pos|].
      eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_R1. lra. }
    assert (B3 : Rabs (d * xv t) <= u * mv t).
    { rewrite Rabs_mult. apply Rmult_le_compat; auto; apply Rabs_pos. }
    assert (T : Rabs (d * (a * b) + E1 * (1 + d) + d * xv t + e)
                <= u * Rabs (a * b) + Rabs E1 * (1 + u) + u * mv t + eta).
    { repeat (eapply Rle_trans; [apply Rabs_triang|apply Rplus_le_compat]); lra. }
    eapply Rle_trans; [exact T|]. rewrite S_INR, g_S. simpl pow.
    assert (0 <= g (ht t) * (1 + u)) by (apply Rmult_le_pos; lra).
    pose proof (Rabs_pos (a * b)).
    assert (Rabs E1 * (1 + u) <= (g (ht t) * mv t + INR (nf t) * eta * (1 + u) ^ ht t) * (1 + u))
      by (apply Rmult_le_compat_r; lra).
    assert (u * Rabs (a * b) <= ((1 + g (ht t)) * (1 + u) - 1) * Rabs (a * b)).
    { apply Rmult_le_compat_r; [lra|]. lra. }
    assert (1 <= (1 + u) * (1 + u) ^ ht t) by nra.
    assert (eta <= eta * ((1 + u) * (1 + u) ^ ht t)) by nra.
    assert (INR (nf t) * eta * (1 + u) ^ ht t * (1 + u)
            = INR (nf t) * eta * ((1 + u) * (1 + u) ^ ht t)) by ring.
    assert (g (ht t) * mv t * (1 + u) + u * mv t = ((1 + g (ht t)) * (1 + u) - 1) * mv t) by ring.
    nra.
  - destruct Hok as [Hl Hr]. specialize (IHl Hl). specialize (IHr Hr).
    pose proof u_pos. pose proof eta_pos.
    destruct (rnd_plus _ _ (cv_fmtb l Hl) (cv_fmtb r Hr)) as [d [Hd E]]. rewrite E.
    set (h := Nat.max (ht l) (ht r)).
    assert (Gl : g (ht l) <= g h) by (apply g_mono; lia).
    assert (Gr : g (ht r) <= g h) by (apply g_mono; lia).
    assert (Pl : (1 + u) ^ ht l <= (1 + u) ^ h) by (apply pow1u_mono; lia).
    assert (Pr : (1 + u) ^ ht r <= (1 + u) ^ h) by (apply pow1u_mono; lia).
    pose proof (mv_nonneg l). pose proof (mv_nonneg r). pose proof (g_nonneg h).
    pose proof (pos_INR (nf l)). pose proof (pos_INR (nf r)).
    set (El := cv l - xv l) in *. set (Er := cv r - xv r) in *.
    replace ((cv l + cv r) * (1 + d) - (xv l + xv r))
      with ((El + Er) * (1 + d) + d * (xv l + xv r)) by (unfold El, Er; ring).
    assert (Bl : Rabs El <= g h * mv l + INR (nf l) * eta * (1 + u) ^ h).
    { eapply Rle_trans; [exact IHl|]. apply Rplus_le_compat; [nra|].
      apply Rmult_le_compat_l; [nra|exact Pl]. }
    assert (Br : Rabs Er <= g h * mv r + INR (nf r) * eta * (1 + u) ^ h).
    { eapply Rle_trans; [exact IHr|]. apply Rplus_le_compat; [nra|].
      apply Rmult_le_compat_l; [nra|exact Pr]. }
    assert (X : Rabs (xv l + xv r) <= mv l + mv r).
    { eapply Rle_trans; [apply Rabs_triang|]. pose proof (xv_le_mv l). pose proof (xv_le_mv r). lra. }
    assert (T : Rabs ((El + Er) * (1 + d) + d * (xv l + xv r))
                <= (Rabs El + Rabs Er) * (1 + u) + u * (mv l + mv r)).
    { eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult.
      apply Rplus_le_compat.
      - apply Rmult_le_compat; try apply Rabs_pos; [apply Rabs_triang|].
        eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_R1. lra.
      - apply Rmult_le_compat; try apply Rabs_pos; assumption. }
    eapply Rle_trans; [exact T|]. rewrite g_S, plus_INR. simpl pow.
    fold h.
    assert ((Rabs El + Rabs Er) * (1 + u)
            <= (g h * (mv l + mv r) + (INR (nf l) + INR (nf r)) * eta * (1 + u) ^ h) * (1 + u))
      by (apply Rmult_le_compat_r; lra).
    nra.
Qed.

(** * Subtrees: every intermediate value of a tree is bounded by its root's magnitudes *)

Inductive sub : tr -> tr -> Prop :=
| sub_refl : forall t, sub t t
| sub_fm : forall s a b t, sub s t -> sub s (Fm a b t)
| sub_adl : forall s l r, sub s l -> sub s (Ad l r)
| sub_adr : forall s l r, sub s r -> sub s (Ad l r).

Lemma sub_props : forall s t, sub s t ->
  mv s <= mv t /\ (ht s <= ht t)%nat /\ (nf s <= nf t)%nat /\ (lok t -> lok s).
Proof.
  intros s t H. induction H as [t|s a b t H IH|s l r H IH|s l r H IH]; simpl.
  - split; [lra|]. split; [lia|]. split; [lia|auto].
  - destruct IH as [A [B [C D]]]. pose proof (Rabs_pos (a * b)).
    split; [lra|]. split; [lia|]. split; [lia|auto].
  - destruct IH as [A [B [C D]]]. pose proof (mv_nonneg r).
    split; [lra|]. split; [lia|]. split; [lia|]. intros [X Y]; auto.
  - destruct IH as [A [B [C D]]]. pose proof (mv_nonneg l).
    split; [lra|]. split; [lia|]. split; [lia|]. intros [X Y]; auto.
Qed.

Lemma sub_bound : forall s t, sub s t -> lok t ->
  Rabs (cv s) <= (1 + u) ^ ht t * (mv t + INR (nf t) * eta).
Proof.
  intros s t Hs Hok. destruct (sub_props s t Hs) as [A [B [C D]]].
  pose proof (tree_err s (D Hok)) as E.
  pose proof (xv_le_mv s). pose proof (mv_nonneg s). pose proof eta_pos.
  assert (Hc : Rabs (cv s) <= (1 + g (ht s)) * mv s + INR (nf s) * eta * (1 + u) ^ ht s).
  { replace (cv s) with ((cv s - xv s) + xv s) by ring.
    eapply Rle_trans; [apply Rabs_triang|]. lra. }
  unfold g in Hc. replace (1 + ((1 + u) ^ ht s - 1)) with ((1 + u) ^ ht s) in Hc by ring.
  pose proof (pow1u_mono _ _ B). pose proof (pow1u_ge1 (ht s)).
  pose proof (le_INR _ _ C). pose proof (pos_INR (nf s)).
  eapply Rle_trans; [exact Hc|].
  assert ((1 + u) ^ ht s * mv s <= (1 + u) ^ ht t * mv t) by (apply Rmult_le_compat; lra).
  assert (INR (nf s) * eta <= INR (nf t) * eta) by (apply Rmult_le_compat_r; lra).
  assert (INR (nf s) * eta * (1 + u) ^ ht s <= INR (nf t) * eta * (1 + u) ^ ht t)
    by (apply Rmult_le_compat; try lra; apply Rmult_le_pos; lra).
  lra.
Qed.

(** * The kernels' trees *)

(** A loop acc = fmaf(a_i, b_i, acc) over the indices of l, in order, from init. *)
Definition chain_fm (a b : nat -> R) (l : list nat) (init : tr) : tr :=
  fold_left (fun t i => Fm (a i) (b i) t) l init.
(** A loop acc += x_i over the indices of l, in order, from init. *)
Definition chain_ad (x : nat -> R) (l : list nat) (init : tr) : tr :=
  fold_left (fun t i => Ad t (Lf (x i))) l init.
(** group_sum<2^k> as lane 0 of the group computes it (warp_reduce.cuh): at offset 2^j
    (j = k - 1 down to 0) v += the value of lane (lane xor 2^j); lane 0's operand is its own
    value, then its partner's. Only lane 0 of each group is read. *)
Fixpoint bfly (k : nat) (f : nat -> tr) : tr :=
  match k with O => f O | S k => bfly k (fun j => Ad (f j) (f (j + 2 ^ k)%nat)) end.
(** The cross-warp sum: o = f 0; o += f 1; ...; o += f k. *)
Fixpoint wchain (k : nat) (f : nat -> tr) : tr :=
  match k with O => f O | S k => Ad (wchain k f) (f (S k)) end.

Lemma chain_fm_props : forall a b l init,
  xv (chain_fm a b l init) = xv init + lsum (fun i => a i * b i) l /\
  mv (chain_fm a b l init) = mv init + lsum (fun i => Rabs (a i * b i)) l /\
  ht (chain_fm a b l init) = (ht init + length l)%nat /\
  nf (chain_fm a b l init) = (nf init + length l)%nat /\
  (lok (chain_fm a b l init) <-> lok init).
Proof.
  intros a b l. induction l as [|i l IH]; intros init; simpl.
  - repeat split; try ring; try lia; auto.
  - unfold chain_fm in IH |- *. simpl.
    destruct (IH (Fm (a i) (b i) init)) as [X [M [H [N L]]]]. simpl in *.
    rewrite X, M, H, N. repeat split; try ring; try lia; apply L.
Qed.

Lemma chain_ad_props : forall x l init,
  xv (chain_ad x l init) = xv init + lsum x l /\
  mv (chain_ad x l init) = mv init + lsum (fun i => Rabs (x i)) l /\
  ht (chain_ad x l init) = (ht init + length l)%nat /\
  nf (chain_ad x l init) = nf init /\
  (lok init -> (forall i, In i l -> fmtb (x i)) -> lok (chain_ad x l init)).
Proof.
  intros x l. induction l as [|i l IH]; intros init; simpl.
  - repeat split; try ring; try lia; auto.
  - unfold chain_ad in IH |- *. simpl.
    destruct (IH (Ad init (Lf (x i)))) as [X [M [H [N L]]]]. simpl in *.
    rewrite X, M, H, N. repeat split; try ring; try lia.
    intros Hi Hx. apply L; [split; [exact Hi|apply Hx; left; reflexivity]|].
    intros j Hj. apply Hx. right. exact Hj.
Qed.

Lemma bfly_props : forall k f,
  xv (bfly k f) = sumn (fun j => xv (f j)) (2 ^ k) /\
  mv (bfly k f) = sumn (fun j => mv (f j)) (2 ^ k) /\
  INR (nf (bfly k f)) = sumn (fun j => INR (nf (f j))) (2 ^ k) /\
  (forall H, (forall j, (j < 2 ^ k)%nat -> (ht (f j) <= H)%nat) -> (ht (bfly k f) <= k + H)%nat) /\
  ((forall j, (j < 2 ^ k)%nat -> lok (f j)) -> lok (bfly k f)).
Proof.
  induction k as [|k IH]; intros f; simpl.
  - repeat split; try ring.
    + intros H HH. specialize (HH O ltac:(lia)). lia.
    + intros HH. apply HH. lia.
  - destruct (IH (fun j => Ad (f j) (f (j + 2 ^ k)%nat))) as [X [M [N [H L]]]].
    rewrite Nat.add_0_r.
    assert (S2 : forall h : nat -> R, sumn h (2 ^ k + 2 ^ k)
                 = sumn (fun j => h j + h (j + 2 ^ k)%nat) (2 ^ k)).
    { intros h. rewrite sumn_add, sumn_plus. f_equal. apply sumn_ext.
      intros i _. f_equal. lia. }
    repeat split.
    + rewrite X, S2. reflexivity.
    + rewrite M, S2. reflexivity.
    + rewrite N, S2. apply sumn_ext. intros i _. simpl. rewrite plus_INR. reflexivity.
    + intros Hh HH. specialize (H (S Hh)).
      assert (H' : (ht (bfly k (fun j => Ad (f j) (f (j + 2 ^ k)%nat))) <= k + S Hh)%nat).
      { apply H. intros j Hj. simpl.
        pose proof (HH j ltac:(lia)). pose proof (HH (j + 2 ^ k)%nat ltac:(lia)). lia. }
      lia.
    + intros HH. apply L. intros j Hj. simpl. split; apply HH; lia.
Qed.

Lemma wchain_props : forall k f,
  xv (wchain k f) = sumn (fun j => xv (f j)) (S k) /\
  mv (wchain k f) = sumn (fun j => mv (f j)) (S k) /\
  INR (nf (wchain k f)) = sumn (fun j => INR (nf (f j))) (S k) /\
  (forall H, (forall j, (j <= k)%nat -> (ht (f j) <= H)%nat) -> (ht (wchain k f) <= k + H)%nat) /\
  ((forall j, (j <= k)%nat -> lok (f j)) -> lok (wchain k f)).
Proof.
  induction k as [|k IH]; intros f; cbn [wchain xv mv ht nf lok sumn].
  - repeat split; try ring.
    + intros H HH. specialize (HH O ltac:(lia)). lia.
    + intros HH. apply HH. lia.
  - destruct (IH f) as [X [M [N [H L]]]]. cbn [sumn] in X, M, N.
    split; [|split; [|split; [|split]]].
    + rewrite X. reflexivity.
    + rewrite M. reflexivity.
    + rewrite plus_INR, N. reflexivity.
    + intros Hh HH. assert (ht (wchain k f) <= k + Hh)%nat by (apply H; intros; apply HH; lia).
      pose proof (HH (S k) ltac:(lia)). lia.
    + intros HH. split; [apply L; intros; apply HH; lia|apply HH; lia].
Qed.

(** ** The exp-sum: T = NW * 2^lw threads, thread t takes i = t, t + T, ... below L. *)

Definition thr_list (T t L : nat) : list nat :=
  filter (fun i => Nat.eqb (i mod T) t) (seq 0 L).

Definition tree_s (lw NW L : nat) (e : nat -> R) : tr :=
  wchain (NW - 1) (fun w => bfly lw (fun l =>
    chain_ad e (thr_list (NW * 2 ^ lw) (w * 2 ^ lw + l) L) (Lf 0))).

Lemma thr_list_length : forall T t L, (0 < T)%nat -> (length (thr_list T t L) <= cdiv L T)%nat.
Proof.
  intros T t L HT. apply (length_inj (fun i => i / T)%nat).
  - apply NoDup_filter_seq.
  - intros x y Hx Hy E. apply in_filter_seq in Hx, Hy.
    destruct Hx as [_ Hx], Hy as [_ Hy]. apply Nat.eqb_eq in Hx, Hy.
    rewrite (Nat.div_mod x T), (Nat.div_mod y T) by lia. rewrite E, Hx, Hy. reflexivity.
  - intros x Hx. apply in_filter_seq in Hx. apply div_lt_cdiv; lia.
Qed.

(** Sums over the T = NW * W threads, taken warp by warp and lane by lane. *)
Lemma sumn_threads : forall (h : nat -> R) NW W,
  sumn (fun w => sumn (fun l => h (w * W + l)%nat) W) NW = sumn h (NW * W).
Proof. intros h NW W. rewrite sumn_mul. reflexivity. Qed.

Lemma tree_s_props : forall lw NW L e, (1 <= NW)%nat ->
  (forall i, (i < L)%nat -> fmtb (e i)) ->
  let t := tree_s lw NW L e in
  xv t = sumn e L /\ mv t = sumn (fun i => Rabs (e i)) L /\ nf t = O /\
  (ht t <= cdiv L (NW * 2 ^ lw) + lw + (NW - 1))%nat /\ lok t.
Proof.
  intros lw NW L e HNW He t.
  set (T := (NW * 2 ^ lw)%nat).
  assert (HT : (0 < T)%nat) by (unfold T; pose proof (Nat.pow_nonzero 2 lw); lia).
  set (ch := fun w l => chain_ad e (thr_list T (w * 2 ^ lw + l) L) (Lf 0)).
  assert (Et : t = wchain (NW - 1) (fun w => bfly lw (ch w))) by reflexivity.
  rewrite Et. clear Et.
  destruct (wchain_props (NW - 1) (fun w => bfly lw (ch w))) as [X [M [N [H Lk]]]].
  replace (S (NW - 1)) with NW in X, M, N by lia.
  assert (Part : forall f : nat -> R, sumn (fun w => sumn (fun l => lsum f (thr_list T (w * 2 ^ lw + l) L)) (2 ^ lw)) NW
                 = sumn f L).
  { intros f. rewrite (sumn_threads (fun t => lsum f (thr_list T t L))).
    fold T. unfold thr_list. rewrite lsum_partition; [apply lsum_seq0|].
    intros i _. apply Nat.mod_upper_bound. lia. }
  repeat split.
  - rewrite X.
    rewrite <- (Part e). apply sumn_ext. intros w _.
    destruct (bfly_props lw (ch w)) as [Xb _]. rewrite Xb. apply sumn_ext. intros l _.
    unfold ch. destruct (chain_ad_props e (thr_list T (w * 2 ^ lw + l) L) (Lf 0)) as [Xc _].
    rewrite Xc. simpl. ring.
  - rewrite M.
    rewrite <- (Part (fun i => Rabs (e i))). apply sumn_ext. intros w _.
    destruct (bfly_props lw (ch w)) as [_ [Mb _]]. rewrite Mb. apply sumn_ext. intros l _.
    unfold ch. destruct (chain_ad_props e (thr_list T (w * 2 ^ lw + l) L) (Lf 0)) as [_ [Mc _]].
    rewrite Mc. simpl. rewrite Rabs_R0. ring.
  - apply INR_eq. rewrite N. simpl INR.
    rewrite <- (Rmult_0_r (INR NW)), <- sumn_const. apply sumn_ext. intros w _.
    destruct (bfly_props lw (ch w)) as [_ [_ [Nb _]]]. rewrite Nb.
    rewrite <- (Rmult_0_r (INR (2 ^ lw))), <- sumn_const. apply sumn_ext. intros l _.
    unfold ch. destruct (chain_ad_props e (thr_list T (w * 2 ^ lw + l) L) (Lf 0)) as [_ [_ [_ [Nc _]]]].
    rewrite Nc. reflexivity.
  -
    assert (ht (wchain (NW - 1) (fun w => bfly lw (ch w))) <= NW - 1 + (lw + cdiv L T))%nat.
    { apply H. intros w _. destruct (bfly_props lw (ch w)) as [_ [_ [_ [Hb _]]]].
      apply Hb. intros l _. unfold ch.
      destruct (chain_ad_props e (thr_list T (w * 2 ^ lw + l) L) (Lf 0)) as [_ [_ [Hc _]]].
      rewrite Hc. simpl. apply thr_list_length. exact HT. }
    lia.
  - apply Lk. intros w _.
    destruct (bfly_props lw (ch w)) as [_ [_ [_ [_ Lb]]]]. apply Lb. intros l _.
    unfold ch. destruct (chain_ad_props e (thr_list T (w * 2 ^ lw + l) L) (Lf 0)) as [_ [_ [_ [_ Lc]]]].
    apply Lc; [apply fmtb_0|]. intros i Hi. apply in_filter_seq in Hi. apply He. lia.
Qed.

(** ** P.V: warp w visits blocks w, w + NW, ...; lane chunk c of a row takes the slots
    c * V_T .. c * V_T + V_T - 1 of each block (B = R * V_T slots). *)

Definition lane_list (B NW VT w c L : nat) : list nat :=
  filter (fun i => andb (Nat.eqb ((i / B) mod NW) w) (Nat.eqb ((i mod B) / VT) c)) (seq 0 L).

Definition tree_o (lr NW B VT L : nat) (p v : nat -> R) : tr :=
  wchain (NW - 1) (fun w => bfly lr (fun c =>
    chain_fm p v (lane_list B NW VT w c L) (Lf 0))).

Lemma lane_list_length : forall B NW VT w c L, (0 < B)%nat -> (0 < NW)%nat -> (0 < VT)%nat ->
  (length (lane_list B NW VT w c L) <= VT * cdiv (cdiv L B) NW)%nat.
Proof.
  intros B NW VT w c L HB HN HV.
  apply (length_inj (fun i => (i / B / NW) * VT + (i mod B) mod VT)%nat).
  - apply NoDup_filter_seq.
  - intros x y Hx Hy E. apply in_filter_seq in Hx, Hy.
    destruct Hx as [_ Hx], Hy as [_ Hy].
    apply andb_prop in Hx, Hy. destruct Hx as [Hx1 Hx2], Hy as [Hy1 Hy2].
    apply Nat.eqb_eq in Hx1, Hx2, Hy1, Hy2.
    pose proof (Nat.mod_upper_bound (x mod B) VT ltac:(lia)).
    pose proof (Nat.mod_upper_bound (y mod B) VT ltac:(lia)).
    assert (E1 : (x / B / NW = y / B / NW)%nat /\ ((x mod B) mod VT = (y mod B) mod VT)%nat)
      by (apply mulmod_unique with VT; assumption).
    destruct E1 as [E1 E2].
    assert (D1 : (x / B = y / B)%nat).
    { rewrite (Nat.div_mod (x / B) NW), (Nat.div_mod (y / B) NW) by lia. lia. }
    assert (D2 : (x mod B = y mod B)%nat).
    { rewrite (Nat.div_mod (x mod B) VT), (Nat.div_mod (y mod B) VT) by lia. lia. }
    rewrite (Nat.div_mod x B), (Nat.div_mod y B) by lia. lia.
  - intros x Hx. apply in_filter_seq in Hx. destruct Hx as [Hx _].
    assert (A : (x / B / NW < cdiv (cdiv L B) NW)%nat)
      by (apply div_lt_cdiv; [lia|apply div_lt_cdiv; lia]).
    pose proof (Nat.mod_upper_bound (x mod B) VT ltac:(lia)). nia.
Qed.

Lemma lane_partition : forall (f : nat -> R) B NW VT R L, (0 < B)%nat -> (0 < NW)%nat ->
  B = (R * VT)%nat ->
  sumn (fun w => sumn (fun c => lsum f (lane_list B NW VT w c L)) R) NW = sumn f L.
Proof.
  intros f B NW VT R L HB HN HBR.
  assert (HV : (0 < VT)%nat) by (destruct VT; lia).
  set (h := fun i => ((i / B) mod NW * R + (i mod B) / VT)%nat).
  assert (Hh : forall i, ((i mod B) / VT < R)%nat).
  { intros i. apply Nat.div_lt_upper_bound; [lia|].
    pose proof (Nat.mod_upper_bound i B ltac:(lia)). lia. }
  rewrite <- (lsum_seq0 f L), <- (lsum_partition h (NW * R)).
  - rewrite <- sumn_threads. apply sumn_ext. intros w Hw. apply sumn_ext. intros c Hc.
    unfold lane_list. f_equal. apply filter_ext. intros i. unfold h.
    pose proof (Hh i).
    destruct (Nat.eqb_spec ((i / B) mod NW) w), (Nat.eqb_spec ((i mod B) / VT) c); simpl;
      symmetry; apply Nat.eqb_eq || apply Nat.eqb_neq; nia.
  - intros i _. unfold h. pose proof (Hh i).
    pose proof (Nat.mod_upper_bound (i / B) NW ltac:(lia)). nia.
Qed.

Lemma tree_o_props : forall lr NW B VT L p v, (1 <= NW)%nat -> (0 < B)%nat ->
  B = (2 ^ lr * VT)%nat ->
  let t := tree_o lr NW B VT L p v in
  xv t = sumn (fun i => p i * v i) L /\ mv t = sumn (fun i => Rabs (p i * v i)) L /\
  nf t = L /\ (ht t <= VT * cdiv (cdiv L B) NW + lr + (NW - 1))%nat /\ lok t.
Proof.
  intros lr NW B VT L p v HNW HB HBR t.
  assert (HV : (0 < VT)%nat) by (destruct VT; lia).
  set (ch := fun w c => chain_fm p v (lane_list B NW VT w c L) (Lf 0)).
  assert (Et : t = wchain (NW - 1) (fun w => bfly lr (ch w))) by reflexivity.
  rewrite Et. clear Et.
  destruct (wchain_props (NW - 1) (fun w => bfly lr (ch w))) as [X [M [N [H Lk]]]].
  replace (S (NW - 1)) with NW in X, M, N by lia.
  assert (Part := fun f => lane_partition f B NW VT (2 ^ lr) L HB ltac:(lia) HBR).
  repeat split.
  - rewrite X, <- Part. apply sumn_ext. intros w _.
    destruct (bfly_props lr (ch w)) as [Xb _]. rewrite Xb. apply sumn_ext. intros c _.
    unfold ch. destruct (chain_fm_props p v (lane_list B NW VT w c L) (Lf 0)) as [Xc _].
    rewrite Xc. simpl. ring.
  - rewrite M, <- Part. apply sumn_ext. intros w _.
    destruct (bfly_props lr (ch w)) as [_ [Mb _]]. rewrite Mb. apply sumn_ext. intros c _.
    unfold ch. destruct (chain_fm_props p v (lane_list B NW VT w c L) (Lf 0)) as [_ [Mc _]].
    rewrite Mc. simpl. rewrite Rabs_R0. ring.
  - apply INR_eq. rewrite N.
    rewrite <- (Rmult_1_r (INR L)), <- sumn_const, <- Part. apply sumn_ext. intros w _.
    destruct (bfly_props lr (ch w)) as [_ [_ [Nb _]]]. rewrite Nb. apply sumn_ext. intros c _.
    unfold ch. destruct (chain_fm_props p v (lane_list B NW VT w c L) (Lf 0)) as [_ [_ [_ [Nc _]]]].
    rewrite Nc, lsum_one. reflexivity.
  -
    assert (ht (wchain (NW - 1) (fun w => bfly lr (ch w)))
            <= NW - 1 + (lr + VT * cdiv (cdiv L B) NW))%nat.
    { apply H. intros w _. destruct (bfly_props lr (ch w)) as [_ [_ [_ [Hb _]]]].
      apply Hb. intros c _. unfold ch.
      destruct (chain_fm_props p v (lane_list B NW VT w c L) (Lf 0)) as [_ [_ [Hc _]]].
      rewrite Hc. simpl. apply lane_list_length; lia. }
    lia.
  - apply Lk. intros w _.
    destruct (bfly_props lr (ch w)) as [_ [_ [_ [_ Lb]]]]. apply Lb. intros c _.
    unfold ch. destruct (chain_fm_props p v (lane_list B NW VT w c L) (Lf 0)) as [_ [_ [_ [_ Lc]]]].
    apply Lc. apply fmtb_0.
Qed.

(** ** q.k: GROUP = 2^lg lanes, lane g takes the elements d with (d / VEC) mod GROUP = g. *)

Definition dlane_list (VEC G g D : nat) : list nat :=
  filter (fun d => Nat.eqb ((d / VEC) mod G) g) (seq 0 D).

Definition tree_dot (lg VEC D : nat) (q k : nat -> R) : tr :=
  bfly lg (fun g => chain_fm q k (dlane_list VEC (2 ^ lg) g D) (Lf 0)).

Lemma dlane_list_length : forall VEC G g J, (0 < VEC)%nat -> (0 < G)%nat ->
  (length (dlane_list VEC G g (G * VEC * J)) <= VEC * J)%nat.
Proof.
  intros VEC G g J HV HG.
  apply (length_inj (fun d => (d / VEC / G) * VEC + d mod VEC)%nat).
  - apply NoDup_filter_seq.
  - intros x y Hx Hy E. apply in_filter_seq in Hx, Hy.
    destruct Hx as [_ Hx], Hy as [_ Hy]. apply Nat.eqb_eq in Hx, Hy.
    pose proof (Nat.mod_upper_bound x VEC ltac:(lia)).
    pose proof (Nat.mod_upper_bound y VEC ltac:(lia)).
    assert (E1 : (x / VEC / G = y / VEC / G)%nat /\ (x mod VEC = y mod VEC)%nat)
      by (apply mulmod_unique with VEC; assumption).
    destruct E1 as [E1 E2].
    assert (D1 : (x / VEC = y / VEC)%nat).
    { rewrite (Nat.div_mod (x / VEC) G), (Nat.div_mod (y / VEC) G) by lia. lia. }
    rewrite (Nat.div_mod x VEC), (Nat.div_mod y VEC) by lia. lia.
  - intros x Hx. apply in_filter_seq in Hx. destruct Hx as [Hx _].
    assert (A : (x / VEC / G < J)%nat).
    { apply Nat.div_lt_upper_bound; [lia|]. apply Nat.div_lt_upper_bound; [lia|]. nia. }
    pose proof (Nat.mod_upper_bound x VEC ltac:(lia)). nia.
Qed.

Lemma tree_dot_props : forall lg VEC J q k, (0 < VEC)%nat ->
  let D := (2 ^ lg * VEC * J)%nat in
  let t := tree_dot lg VEC D q k in
  xv t = sumn (fun d => q d * k d) D /\ mv t = sumn (fun d => Rabs (q d * k d)) D /\
  nf t = D /\ (ht t <= VEC * J + lg)%nat /\ lok t.
Proof.
  intros lg VEC J q k HV D t.
  assert (HG : (0 < 2 ^ lg)%nat) by (pose proof (Nat.pow_nonzero 2 lg); lia).
  set (ch := fun g => chain_fm q k (dlane_list VEC (2 ^ lg) g D) (Lf 0)).
  assert (Et : t = bfly lg ch) by reflexivity. rewrite Et. clear Et.
  destruct (bfly_props lg ch) as [X [M [N [H Lk]]]].
  assert (Part : forall f : nat -> R, sumn (fun g => lsum f (dlane_list VEC (2 ^ lg) g D)) (2 ^ lg)
                 = sumn f D).
  { intros f. unfold dlane_list. rewrite lsum_partition; [apply lsum_seq0|].
    intros i _. apply Nat.mod_upper_bound. lia. }
  repeat split.
  - rewrite X, <- Part. apply sumn_ext. intros g _.
    unfold ch. destruct (chain_fm_props q k (dlane_list VEC (2 ^ lg) g D) (Lf 0)) as [Xc _].
    rewrite Xc. simpl. ring.
  - rewrite M, <- Part. apply sumn_ext. intros g _.
    unfold ch. destruct (chain_fm_props q k (dlane_list VEC (2 ^ lg) g D) (Lf 0)) as [_ [Mc _]].
    rewrite Mc. simpl. rewrite Rabs_R0. ring.
  - apply INR_eq. rewrite N.
    rewrite <- (Rmult_1_r (INR D)), <- sumn_const, <- Part. apply sumn_ext. intros g _.
    unfold ch. destruct (chain_fm_props q k (dlane_list VEC (2 ^ lg) g D) (Lf 0)) as [_ [_ [_ [Nc _]]]].
    rewrite Nc, lsum_one. reflexivity.
  -
    assert (ht (bfly lg ch) <= lg + VEC * J)%nat.
    { apply H. intros g _. unfold ch.
      destruct (chain_fm_props q k (dlane_list VEC (2 ^ lg) g D) (Lf 0)) as [_ [_ [Hc _]]].
      rewrite Hc. simpl. apply dlane_list_length; lia. }
    lia.
  - apply Lk. intros g _. unfold ch.
    destruct (chain_fm_props q k (dlane_list VEC (2 ^ lg) g D) (Lf 0)) as [_ [_ [_ [_ Lc]]]].
    apply Lc. apply fmtb_0.
Qed.

(** ** The rare path: one sequential chain over all L tokens. *)

Definition chain (L : nat) (p v : nat -> R) : tr := chain_fm p v (seq 0 L) (Lf 0).

Lemma chain_props : forall L p v,
  let t := chain L p v in
  xv t = sumn (fun i => p i * v i) L /\ mv t = sumn (fun i => Rabs (p i * v i)) L /\
  nf t = L /\ ht t = L /\ lok t.
Proof.
  intros L p v t. destruct (chain_fm_props p v (seq 0 L) (Lf 0)) as [X [M [H [N Lk]]]].
  unfold t, chain. rewrite X, M, H, N, !lsum_seq0, seq_length. cbn [xv mv ht nf].
  rewrite Rabs_R0. split; [ring|]. split; [ring|]. split; [lia|]. split; [lia|].
  apply Lk, fmtb_0.
Qed.
