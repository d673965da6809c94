(** Prints the axioms each main theorem rests on; proofs/coq/check.sh compares the list
    with assumptions.expected. Each block starts with a THEOREM line for the parser. *)
From PagedAttn Require Import Sums LseExact LseRound Logit Kernel V1 V2 Main.

Goal True. idtac "THEOREM merge_empty_identity". Abort.
Print Assumptions merge_empty_identity.
Goal True. idtac "THEOREM merge_comm". Abort.
Print Assumptions merge_comm.
Goal True. idtac "THEOREM merge_assoc". Abort.
Print Assumptions merge_assoc.
Goal True. idtac "THEOREM fold_partitions_softmax". Abort.
Print Assumptions fold_partitions_softmax.
Goal True. idtac "THEOREM fold_partitions_softmax_left". Abort.
Print Assumptions fold_partitions_softmax_left.
Goal True. idtac "THEOREM v2_eq_v1". Abort.
Print Assumptions v2_eq_v1.
Goal True. idtac "THEOREM denominator_ge_one". Abort.
Print Assumptions denominator_ge_one.
Goal True. idtac "THEOREM shift_invariance". Abort.
Print Assumptions shift_invariance.
Goal True. idtac "THEOREM empty_partitions_neutral". Abort.
Print Assumptions empty_partitions_neutral.
Goal True. idtac "THEOREM merge_code_eq". Abort.
Print Assumptions merge_code_eq.
Goal True. idtac "THEOREM weighted_sum_eq_fold". Abort.
Print Assumptions weighted_sum_eq_fold.
Goal True. idtac "THEOREM weighted_sum_softmax". Abort.
Print Assumptions weighted_sum_softmax.
Goal True. idtac "THEOREM merge_step_error_s". Abort.
Print Assumptions merge_step_error_s.
Goal True. idtac "THEOREM merge_step_error". Abort.
Print Assumptions merge_step_error.
Goal True. idtac "THEOREM weighted_sum_error". Abort.
Print Assumptions weighted_sum_error.
Goal True. idtac "THEOREM fold_error". Abort.
Print Assumptions fold_error.
Goal True. idtac "THEOREM tree_err". Abort.
Print Assumptions tree_err.
Goal True. idtac "THEOREM logit_err". Abort.
Print Assumptions logit_err.
Goal True. idtac "THEOREM logit_no_overflow". Abort.
Print Assumptions logit_no_overflow.
Goal True. idtac "THEOREM assemble". Abort.
Print Assumptions assemble.
Goal True. idtac "THEOREM v1_error". Abort.
Print Assumptions v1_error.
Goal True. idtac "THEOREM v2_error". Abort.
Print Assumptions v2_error.
Goal True. idtac "THEOREM kernel_error_bound". Abort.
Print Assumptions kernel_error_bound.
