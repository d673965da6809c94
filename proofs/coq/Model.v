(** The kernels as they compute one output element, in the model of Fp.v: the attention
    kernel (kernels/src/attention_kernel.cuh) for one partition, fast and rare paths, and
    the V2 reduce (kernels/src/reduce_kernel.cuh), fast and rare paths, for our numerics
    (Numerics::exact_fp32) and vLLM's (Numerics::vllm_compatible: rounded probabilities,
    epsilon denominator, partials in the output dtype), with the cache in the scalar type
    or fp8. Each definition names the lines it models. *)
From Coq Require Import Reals List Lra Lia.
Import ListNotations.
From Flocq Require Import Core.
From PagedAttn Require Import Fp Sums LseRound.
Open Scope R_scope.

(** * Launch geometry (attention_kernel.cuh's constants)
    GROUP = 2^lg lanes per token for q.k, each lane taking J chunks of VEC elements, so
    HEAD_SIZE = 2^lg * VEC * J; WARP = 2^lw; NUM_WARPS = nw; LANES_PER_ROW = 2^lr lanes of
    V_TOKENS = vt slots each per value row, BLOCK_SIZE = 2^lr * vt; a warp covers one block
    (WARP = BLOCK_SIZE * GROUP). *)
Record geom := Geom { g_lg : nat; g_vec : nat; g_J : nat; g_lw : nat; g_nw : nat;
                      g_lr : nat; g_vt : nat }.

Definition g_D (g : geom) : nat := (2 ^ g_lg g * g_vec g * g_J g)%nat.
Definition g_B (g : geom) : nat := (2 ^ g_lr g * g_vt g)%nat.
Definition g_W (g : geom) : nat := (2 ^ g_lw g)%nat.
Definition g_T (g : geom) : nat := (g_nw g * 2 ^ g_lw g)%nat.

Definition geom_ok (g : geom) : Prop :=
  (0 < g_vec g)%nat /\ (1 <= g_nw g)%nat /\ (0 < g_vt g)%nat /\
  g_W g = (g_B g * 2 ^ g_lg g)%nat.

(** * Numerics (NumericsChoices, kernel_args.h) *)
Record numerics := Num { n_s : sfmt;      (* scalar_t: query and output dtype *)
                         n_fp8 : bool;    (* cache_t is an fp8 byte *)
                         n_vl : bool }.   (* vllm_compatible: round_p, eps, !tmp_fp32 *)

(** vLLM's 1e-6f: the float nearest 1e-6, 8796093 * 2^-43. *)
Definition eps32 : R := IZR 8796093 * bpow radix2 (-43).

(** * One token's logit (the q.k block of attention_kernel.cuh) *)

(** The key element the fma reads: the cache element as float (decoded exactly), and for
    vLLM with fp8 round_to<scalar_t>(kv * k_scale). *)
Definition key_used (nm : numerics) (ks kr : R) : R :=
  if andb (n_fp8 nm) (n_vl nm) then cvt (n_s nm) (rnd (kr * ks)) else kr.

(** a.qk_scale (runner.cuh): float(scale * k_scale) for fp8 under our numerics (scale and
    k_scale are floats, their product is exact in double), else scale. *)
Definition qk_scale (nm : numerics) (sc ks : R) : R :=
  if andb (n_fp8 nm) (negb (n_vl nm)) then rnd (sc * ks) else sc.

(** logit = dot * qk_scale, then the ALiBi fma(slope, pos, logit); without ALiBi the kernel
    skips the fma, which is rnd(0 * pos + logit) = logit (alibi_off), so slope = 0 models it. *)
Definition logit_hat (g : geom) (nm : numerics) (sc ks : R) (q kr : nat -> R) (slope pos : R) : R :=
  rnd (slope * pos +
       rnd (cv (tree_dot (g_lg g) (g_vec g) (g_D g) q (fun d => key_used nm ks (kr d)))
            * qk_scale nm sc ks)).

(** The exact logit: scale * sum_d q_d k_d (k dequantized: k_raw * k_scale for fp8) +
    slope * pos. *)
Definition logit_exact (g : geom) (nm : numerics) (sc ks : R) (q kr : nat -> R) (slope pos : R) : R :=
  sc * sumn (fun d => q d * (if n_fp8 nm then kr d * ks else kr d)) (g_D g) + slope * pos.

(** * One partition of L tokens (relative index j), x_j its computed logits *)

Fixpoint mx (x : nat -> R) (k : nat) : R :=
  match k with O => x O | S k => Rmax (mx x k) (x (S k)) end.
(** The partition max: fmaxf over the logits, exact in any order. *)
Definition pmax (L : nat) (x : nat -> R) : R := mx x (L - 1).

(** e_j = LseState{logit_j, 1}.weight_at(m, FastExp()) = 1 * exp_fn(logit_j - m). *)
Definition ehat (fe : R -> R) (L : nat) (x : nat -> R) (j : nat) : R :=
  rnd (1 * fe (rnd (x j - pmax L x))).

Definition shat (g : geom) (L : nat) (e : nat -> R) : R := cv (tree_s (g_lw g) (g_nw g) L e).

(** vLLM's inv = 1.f / (s + 1e-6f). *)
Definition inv_eps (s : R) : R := rnd (/ rnd (s + eps32)).

Definition down64 (x : R) : R := rnd (x * bpow radix2 (-64)).
Definition up64 (x : R) : R := rnd (x * bpow radix2 64).

(** The partition's output element before the partial is stored (o in the kernel), for
    raw value elements vr (decoded, before v_scale), on the fast path (P.V trees, then the
    cross-warp sum) or the rare path (one fmaf chain over the partition on values scaled by
    2^-64, then scaled back). *)
Definition o_pre (g : geom) (nm : numerics) (vs : R) (L : nat) (e vr : nat -> R)
    (rare : bool) : R :=
  let s := shat g L e in
  if n_vl nm then
    let iv := inv_eps s in
    let pp j := cvt (n_s nm) (rnd (e j * iv)) in
    if rare then
      up64 (cv (chain L pp (fun j => if n_fp8 nm then rnd (down64 (vr j) * vs)
                                     else down64 (vr j))))
    else
      cv (tree_o (g_lr g) (g_nw g) (g_B g) (g_vt g) L pp
                 (fun j => if n_fp8 nm then cvt (n_s nm) (rnd (vr j * vs)) else vr j))
  else
    if rare then up64 (rnd (cv (chain L e (fun j => down64 (vr j))) / s))
    else rnd (cv (tree_o (g_lr g) (g_nw g) (g_B g) (g_vt g) L e vr) / s).

(** Then: fp8 under our numerics multiplies by v_scale; the rare path saturates when the
    cache is not fp8. *)
Definition o_fin (nm : numerics) (vs : R) (rare : bool) (o : R) : R :=
  if n_fp8 nm then (if n_vl nm then o else rnd (o * vs)) else (if rare then saturate o else o).

Definition part_o (g : geom) (nm : numerics) (vs : R) (L : nat) (e vr : nat -> R)
    (rare : bool) : R := o_fin nm vs rare (o_pre g nm vs L e vr rare).

(** V2's stored partial (tmp_out): a float for ours, the scalar type for vLLM. *)
Definition partial (g : geom) (nm : numerics) (vs : R) (L : nat) (e vr : nat -> R)
    (rare : bool) : R :=
  if n_vl nm then cvt (n_s nm) (part_o g nm vs L e vr rare) else part_o g nm vs L e vr rare.

(** The P.V rare-path flag: the kernel takes the rare path only when some warp partial
    of some output element is not finite or exceeds FLT_MAX / NUM_WARPS. In IEEE
    arithmetic either means that some intermediate value of some element's P.V tree,
    whose leaves are the probabilities pp and that element's values w (|w| <= Vk), exceeds
    FLT_MAX / NUM_WARPS in this model (an overflowed intermediate exceeds FLT_MAX here). *)
Definition pv_flag (g : geom) (L : nat) (pp : nat -> R) (Vk : R) : Prop :=
  exists (w : nat -> R) s, (forall j, (j < L)%nat -> Rabs (w j) <= Vk) /\
    sub s (tree_o (g_lr g) (g_nw g) (g_B g) (g_vt g) L pp w) /\
    flt_max / INR (g_nw g) < Rabs (cv s).

(** The probabilities the P.V trees read: e_j (ours) or vLLM's rounded e_j * inv. *)
Definition probs (g : geom) (nm : numerics) (L : nat) (e : nat -> R) (j : nat) : R :=
  if n_vl nm then cvt (n_s nm) (rnd (e j * inv_eps (shat g L e))) else e j.

(** * The V2 reduce *)

Definition state_of (g : geom) (nm : numerics) (vs : R) (fe : R -> R) (L : nat)
    (x vr : nat -> R) (rare : bool) : st3 :=
  (pmax L x, shat g L (ehat fe L x), partial g nm vs L (ehat fe L x) vr rare).

Definition scale_state (a : st3) : st3 := (mm a, ss a, down64 (oo a)).

(** Pass 1: M = fmaxf over the partitions' maxima. *)
Fixpoint lmaxst (l : list st3) (m0 : R) : R :=
  match l with [] => m0 | a :: r => lmaxst r (Rmax m0 (mm a)) end.

(** Pass 2 and the result: WeightedSum, then result(k) = acc / total (ours) or acc * inv
    with inv = 1 / (total + 1e-6f) (vLLM); the rare path folds the partials scaled by
    2^-64, scales back and saturates. *)
Definition reduce_out (nm : numerics) (fe : R -> R) (l : list st3) (rare : bool) : R :=
  let M := lmaxst l (mm (hd (0, 0, 0) l)) in
  let r := ws_fold fe M (if rare then map scale_state l else l) (0, 0) in
  let o := if n_vl nm then rnd (snd r * inv_eps (fst r)) else ws_result r in
  if rare then saturate (up64 o) else o.

(** The output element: V1 writes from_float(o); V2 with one partition copies the partial
    (num_parts <= 1: its weight at its own max is nonzero, see Kernel.v); V2 with P > 1
    partitions writes from_float of the reduce. *)
Definition v1_out (g : geom) (nm : numerics) (vs : R) (fe : R -> R) (L : nat)
    (x vr : nat -> R) (rare : bool) : R :=
  cvt (n_s nm) (part_o g nm vs L (ehat fe L x) vr rare).

Definition v2_out (g : geom) (nm : numerics) (vs : R) (fe : R -> R) (P : nat)
    (Lp : nat -> nat) (x vr : nat -> nat -> R) (rare : nat -> bool) (rrare : bool) : R :=
  let l := map (fun p => state_of g nm vs fe (Lp p) (x p) (vr p) (rare p)) (seq 0 P) in
  cvt (n_s nm) (reduce_out nm fe l rrare).

Definition v2_copy_out (g : geom) (nm : numerics) (vs : R) (fe : R -> R) (L : nat)
    (x vr : nat -> R) (rare : bool) : R :=
  let a := state_of g nm vs fe L x vr rare in
  let w := ws_weight fe (mm a) a in
  cvt (n_s nm) (if Req_EM_T w 0 then 0 else oo a).
