(** The bound of theorem kernel_error_bound (Main.v), as explicit definitions: the
    coefficients named as in proofs/error_bound.md. *)
From Coq Require Import Reals Lra Lia.
From Flocq Require Import Core.
From PagedAttn Require Import Fp Sums Compose Model Logit Weights Part PartK.
Open Scope R_scope.

(** The launch (KernelConfig): geometry, numerics, V2 with more than one partition, the
    exp's accuracy a + b|t| ulps, scale, k_scale, v_scale (floats). *)
Record kcfg := KCfg { k_g : geom; k_nm : numerics; k_v2 : bool;
                      k_a : R; k_b : R; k_sc : R; k_ks : R; k_vs : R }.
(** A row's exact magnitudes (RowMagnitudes, upper bounds): n tokens in P partitions of at
    most L tokens; spread >= x_max - x_min, X >= |x_i|, Qm >= Q_i, V >= |v_id| (every d),
    Sq >= sum_d |q_d|, pgap >= sum p_i (x_max - x_i), pqk >= sum p_i Q_i, px >= sum p_i |x_i|. *)
Record krow := KRow { r_n : nat; r_P : nat; r_L : nat; r_spread : R; r_X : R; r_Qm : R;
                      r_V : R; r_Sq : R; r_pgap : R; r_pqk : R; r_px : R }.
(** An element's exact magnitudes (ElementMagnitudes, upper bounds): Y >= |y|, A >= sum p_i
    |v_i|, dev >= sum p_i |v_i - y|, and the same weighted by x_max - x_i, Q_i, |x_i|. *)
Record kel := KEl { e_Y : R; e_A : R; e_dev : R; e_dgap : R; e_dqk : R; e_dx : R }.

Definition eta_e : R := bpow radix2 (-126).

Section B.
Variables (c : kcfg) (r : krow) (el : kel).

(* section 3: the logits *)
Definition b_gdot : R := gdot (k_g c) (k_nm c) (k_sc c) (k_ks c).
Definition b_etaq : R := eta_q (k_g c) (k_nm c) (k_sc c) (k_ks c) (r_Sq r).
Definition b_xi : R := b_gdot * (1 + u) * r_Qm r + u * r_X r + b_etaq.
(* section 4: the weights *)
Definition b_tmax : R := r_spread r + 2 * b_xi.
Definition b_alpha : R := 2 * u * k_a c.
Definition b_beta : R := 2 * u * k_b c.
Definition b_em : R := Emax b_alpha b_beta b_tmax.
Definition b_m0 : R := if k_v2 c then m0_2 b_alpha b_beta b_tmax else m0_1 b_alpha.
Definition b_m1 : R := if k_v2 c then m1_2 b_alpha b_beta b_tmax else m1_1 b_beta.
Definition b_mum : R := b_m0 + b_m1 * b_tmax.
Definition b_phm : R := b_xi + u * b_tmax * (1 + u).
Definition b_kc : R := Kc b_phm b_mum.
Definition b_cqk : R := b_gdot * (1 + u).
Definition b_cgap : R := u * (1 + u) + b_m1.
Definition b_c0 : R := b_etaq + 2 * b_cgap * b_xi + b_m0.
Definition b_ST : R := b_kc * (b_cqk * r_pqk r + u * r_px r + b_cgap * r_pgap r + b_c0).
Definition b_Tm : R := b_kc * (b_phm + b_mum).
(* sections 2, 5, 6: the partition *)
Definition b_gs : R := Sums.g (hs (k_g c) (r_L r)).
Definition b_e0 : R := 1 - b_alpha - eta_e.
Definition b_smin : R := (1 - b_gs) * b_e0.
Definition b_emax : R := 1 + b_em + eta_e.
Definition b_Z : R := if k_v2 c then Z2 b_alpha b_beta b_tmax eta_e b_smin else eta_e.
Definition b_Zk : R := b_Z * exp b_xi.
Definition b_d0 : R := 1 - b_ST - INR (r_n r) * b_Zk.
Definition b_SWmin : R := exp (- b_xi) * b_d0.
(** The values the P.V loop reads, and the probabilities, bounded; the rare path is
    excluded when no partial of any element can reach FLT_MAX / NUM_WARPS. *)
Definition b_Vk : R :=
  if n_vl (k_nm c) then vv_max (rw_fast (k_nm c)) (zw_fast (k_nm c)) (r_V r)
  else if n_fp8 (k_nm c) then r_V r / Rabs (k_vs c) else r_V r.
Definition b_pm : R :=
  if n_vl (k_nm c) then pmax_v (n_s (k_nm c)) b_smin b_emax else b_emax.
Definition b_pre : bool :=
  if Rle_dec ((1 + u) ^ ho (k_g c) (r_L r) * (INR (r_L r) * (b_pm * b_Vk + eta)))
             (flt_max / INR (g_nw (k_g c)))
  then (if andb (n_fp8 (k_nm c)) (negb (n_vl (k_nm c)))
        then (if Req_EM_T (k_vs c) 0 then false else true) else true)
  else false.
Definition b_pcF : pc := pcs (k_g c) (k_nm c) (k_vs c) (r_L r) b_smin b_emax (r_V r) false.
Definition b_pcR0 : pc := pcs (k_g c) (k_nm c) (k_vs c) (r_L r) b_smin b_emax (r_V r) true.
Definition b_ob : R :=
  o_bound (pc_aN b_pcR0) (pc_bN b_pcR0) (pc_eN b_pcR0) (pc_th b_pcR0) (pc_ze b_pcR0)
          (r_V r) b_gs b_smin.
(** V2 and a scalar cache: the rare path's partial is saturated. *)
Definition b_pcR : pc :=
  if andb (k_v2 c) (negb (n_fp8 (k_nm c)))
  then PC (pc_aN b_pcR0) (pc_bN b_pcR0) (pc_eN b_pcR0) (th_sat (pc_th b_pcR0) b_ob) (pc_ze b_pcR0)
  else b_pcR0.
Definition b_pcU : pc := if b_pre then b_pcF else pc_max b_pcF b_pcR.
(** V2: vLLM stores the partial in the scalar type. *)
Definition b_pcP : pc :=
  if n_vl (k_nm c)
  then PC (pc_aN b_pcU) (pc_bN b_pcU) (pc_eN b_pcU)
          ((1 + pc_th b_pcU) * (1 + us (n_s (k_nm c))) - 1)
          (pc_ze b_pcU * (1 + us (n_s (k_nm c))) + etas (n_s (k_nm c)))
  else b_pcU.
(* section 5: the reduce (V2) *)
Definition b_lam : R := (1 + b_em) * (1 + u) + Zlam eta_e b_smin.
Definition b_a1 : R := (1 + pc_th b_pcP) * (1 + pc_aN b_pcP) - 1.
Definition b_b1 : R := (1 + pc_th b_pcP) * pc_bN b_pcP + (pc_ze b_pcP + eta64) * (1 + b_gs).
Definition b_e1 : R := (1 + pc_th b_pcP) * pc_eN b_pcP * INR (r_P r) * b_lam.
Definition b_gP : R := Sums.g (r_P r).
Definition b_gP1 : R := Sums.g (r_P r - 1).
Definition b_aN : R := if k_v2 c then (1 + b_gP) * (1 + b_a1) - 1 else pc_aN b_pcU.
Definition b_bN : R := if k_v2 c then (1 + b_gP) * b_b1 else pc_bN b_pcU.
Definition b_eN : R :=
  if k_v2 c then (1 + b_gP) * b_e1 + INR (r_P r) * eta64 * (1 + u) ^ r_P r else pc_eN b_pcU.
Definition b_aD : R := if k_v2 c then (1 + b_gP1) * (1 + b_gs) - 1 else b_gs.
Definition b_totmin : R := (1 - b_gP1) * (b_smin * b_e0 * (1 - u) - eta).
Definition b_accm : R := ((1 + b_aN) * r_V r + b_bN) * (b_lam * INR (r_n r) * b_emax) + b_eN.
Definition b_th : R :=
  if k_v2 c then (if n_vl (k_nm c) then (1 + thv b_totmin) * (1 + u) - 1 else u)
  else pc_th b_pcU.
Definition b_ze : R :=
  if k_v2 c then (if n_vl (k_nm c) then eta * (1 + u) * b_accm + eta64 else eta64)
  else pc_ze b_pcU.

(* lemmas 4.7 and 5.5, section 8: the element *)
Definition b_SA : R :=
  b_kc * (b_cqk * e_dqk el + u * e_dx el + b_cgap * e_dgap el + b_c0 * e_dev el).
Definition b_Esm : R := (b_SA + b_Zk * (2 * INR (r_n r) * r_V r)) / b_d0.
Definition b_Aq : R := (e_A el * (1 + b_Tm) + b_Zk * INR (r_n r) * r_V r) / b_d0.
Definition b_Y : R := Rmin (e_Y el) (e_A el).
Definition b_Yq : R := b_Y + b_Esm.
Definition b_Es : R := (b_aN * b_Aq + b_bN + b_eN / b_SWmin + b_aD * b_Yq) / (1 - b_aD).
Definition b_E32 : R := b_Esm + b_Es + b_th * (b_Yq + b_Es) + b_ze.
Definition b_final : R := us (n_s (k_nm c)) * (b_Y + b_E32) + etas (n_s (k_nm c)).
Definition b_total : R := b_E32 + b_final.

(** The hypotheses the C++ checks (it returns +inf where one fails). *)
Definition bound_ok : Prop :=
  0 <= k_a c /\ 0 <= k_b c /\ 0 <= r_V r /\ r_V r <= flt_max /\
  0 < b_e0 /\ b_gs < 1 /\ 0 < b_d0 /\ b_aD < 1 /\
  (n_vl (k_nm c) = true -> eps32 / b_smin < 1 /\ thv b_smin < 1) /\
  (k_v2 c = true -> 0 < b_totmin /\
     (n_vl (k_nm c) = true -> eps32 / b_totmin < 1 /\ thv b_totmin < 1)) /\
  (k_v2 c = true -> n_fp8 (k_nm c) = false -> pc_th b_pcR0 < 1 /\ 0 < b_ob) /\
  (k_v2 c = true -> (2 <= r_P r)%nat) /\
  eta < b_smin * b_e0 * (1 - u).

(** The precondition that excludes the logit's rescue path (slow_logit): no value of the
    fast q.k path can overflow (Logit.logit_no_overflow). *)
Definition logit_pre : Prop :=
  lg_c (k_nm c) (k_sc c) (k_ks c) <> 0 /\
  (1 + u) ^ hdot (k_g c) *
    ((1 + lg_rk (k_nm c)) * (r_Qm r / Rabs (lg_c (k_nm c) (k_sc c) (k_ks c)))
     + lg_ek (k_nm c) * r_Sq r + INR (g_D (k_g c)) * eta) <= flt_max.

End B.
