"""Drop-in replacements for vLLM's _custom_ops.paged_attention_v1/_v2 (same arguments,
same defaults), routed to torch.ops.pagedattn. The switch-on helper points vLLM here."""
import pagedattn_torch as _pa


def paged_attention_v1(out, query, key_cache, value_cache, num_kv_heads, scale, block_tables,
                       seq_lens, block_size, max_seq_len, alibi_slopes, kv_cache_dtype, k_scale,
                       v_scale, tp_rank=0, blocksparse_local_blocks=0, blocksparse_vert_stride=0,
                       blocksparse_block_size=64, blocksparse_head_sliding_step=0):
    _pa.paged_attention_v1(out, query, key_cache, value_cache, num_kv_heads, scale,
                           block_tables, seq_lens, block_size, max_seq_len, alibi_slopes,
                           kv_cache_dtype, k_scale, v_scale, tp_rank, blocksparse_local_blocks,
                           blocksparse_vert_stride, blocksparse_block_size,
                           blocksparse_head_sliding_step)


def paged_attention_v2(out, exp_sum, max_logits, tmp_out, query, key_cache, value_cache,
                       num_kv_heads, scale, block_tables, seq_lens, block_size, max_seq_len,
                       alibi_slopes, kv_cache_dtype, k_scale, v_scale, tp_rank=0,
                       blocksparse_local_blocks=0, blocksparse_vert_stride=0,
                       blocksparse_block_size=64, blocksparse_head_sliding_step=0):
    _pa.paged_attention_v2(out, exp_sum, max_logits, tmp_out, query, key_cache, value_cache,
                           num_kv_heads, scale, block_tables, seq_lens, block_size, max_seq_len,
                           alibi_slopes, kv_cache_dtype, k_scale, v_scale, tp_rank,
                           blocksparse_local_blocks, blocksparse_vert_stride,
                           blocksparse_block_size, blocksparse_head_sliding_step)
