#include "random_model/command_line.h"

#include <exception>
#include <sstream>

#include "gguf/gguf.h"

namespace vkllm::random_model {
namespace {

int parse_count(const std::string& option, const std::string& text) {
    try {
        size_t used = 0;
        long v = std::stol(text, &used);
        if (used == text.size() && v >= 0 && v <= (1l << 30)) return int(v);
    } catch (const std::exception&) {
    }
    throw ConfigError(option + " '" + text + "' is not a non-negative integer");
}

float parse_number(const std::string& option, const std::string& text) {
    try {
        size_t used = 0;
        float v = std::stof(text, &used);
        if (used == text.size()) return v;
    } catch (const std::exception&) {
    }
    throw ConfigError(option + " '" + text + "' is not a number");
}

uint64_t parse_seed(const std::string& text) {
    try {
        size_t used = 0;
        uint64_t v = std::stoull(text, &used, 0);
        if (used == text.size() && text[0] != '-') return v;
    } catch (const std::exception&) {
    }
    throw ConfigError("--seed '" + text + "' is not an unsigned integer");
}

}  // namespace

CommandLine parse_command_line(const std::vector<std::string>& args, const std::string& default_vocab) {
    CommandLine cl;
    cl.vocab = default_vocab;
    RandomModelConfig& c = cl.config;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& opt = args[i];
        if (opt == "-h" || opt == "--help") {
            cl.help = true;
            continue;
        }
        if (opt == "--tied") {
            c.tied = true;
            continue;
        }
        if (opt == "--two-norms") {
            c.two_norms = true;
            continue;
        }
        if (opt == "--ssm-dt-b-c-rms") {
            c.ssm_dt_b_c_rms = true;
            continue;
        }
        if (i + 1 >= args.size()) throw ConfigError(opt + " needs a value (see --help)");
        const std::string& val = args[++i];
        if (opt == "--arch") c.arch = val;
        else if (opt == "--out") cl.out = val;
        else if (opt == "--name") c.name = val;
        else if (opt == "--vocab-from") cl.vocab = val;
        else if (opt == "--seed") c.seed = parse_seed(val);
        else if (opt == "--n-embd") c.n_embd = parse_count(opt, val);
        else if (opt == "--n-layer") c.n_layer = parse_count(opt, val);
        else if (opt == "--n-head") c.n_head = parse_count(opt, val);
        else if (opt == "--n-head-kv") c.n_head_kv = parse_count(opt, val);
        else if (opt == "--n-ff") c.n_ff = parse_count(opt, val);
        else if (opt == "--n-ctx") c.n_ctx = parse_count(opt, val);
        else if (opt == "--threads") cl.threads = parse_count(opt, val);
        else if (opt == "--head-dim") c.head_dim = parse_count(opt, val);
        else if (opt == "--rope-dims") c.rope_dims = parse_count(opt, val);
        else if (opt == "--n-expert") c.n_expert = parse_count(opt, val);
        else if (opt == "--n-expert-used") c.n_expert_used = parse_count(opt, val);
        else if (opt == "--n-ff-exp") c.n_ff_exp = parse_count(opt, val);
        else if (opt == "--sliding-window") c.sliding_window = parse_count(opt, val);
        else if (opt == "--moe-layer-step") c.moe_layer_step = parse_count(opt, val);
        else if (opt == "--q-lora-rank") c.q_lora_rank = parse_count(opt, val);
        else if (opt == "--kv-lora-rank") c.kv_lora_rank = parse_count(opt, val);
        else if (opt == "--v-head-dim") c.v_head_dim = parse_count(opt, val);
        else if (opt == "--leading-dense") c.leading_dense = parse_count(opt, val);
        else if (opt == "--n-expert-shared") c.n_expert_shared = parse_count(opt, val);
        else if (opt == "--ssm-conv") c.ssm_conv = parse_count(opt, val);
        else if (opt == "--ssm-inner") c.ssm_inner = parse_count(opt, val);
        else if (opt == "--ssm-state") c.ssm_state = parse_count(opt, val);
        else if (opt == "--ssm-head-dim") c.ssm_head_dim = parse_count(opt, val);
        else if (opt == "--ssm-groups") c.ssm_groups = parse_count(opt, val);
        else if (opt == "--layers") c.layers = val;
        else if (opt == "--conv-l-cache") c.conv_l_cache = parse_count(opt, val);
        else if (opt == "--ssm-dt-rank") c.ssm_dt_rank = parse_count(opt, val);
        else if (opt == "--expert-groups") {
            const size_t colon = val.find(':');
            if (colon == std::string::npos) throw ConfigError("--expert-groups '" + val + "': expected GROUPS:USED");
            c.n_expert_groups = parse_count(opt, val.substr(0, colon));
            c.n_group_used = parse_count(opt, val.substr(colon + 1));
        } else if (opt == "--expert-gating") c.expert_gating = val;
        else if (opt == "--expert-weights-norm") c.expert_weights_norm = parse_count(opt, val);
        else if (opt == "--expert-weights-scale") c.expert_weights_scale = parse_number(opt, val);
        else if (opt == "--yarn-log-multiplier") c.yarn_log_multiplier = parse_number(opt, val);
        else if (opt == "--type") {
            auto t = gguf::type_from_name(val);
            if (!t) throw ConfigError("--type '" + val + "' is not a GGUF tensor type");
            c.type = *t;
        } else if (opt == "--expert-type") {
            auto t = gguf::type_from_name(val);
            if (!t) throw ConfigError("--expert-type '" + val + "' is not a GGUF tensor type");
            c.expert_type = *t;
        } else if (opt == "--rope-freq-base") c.rope_freq_base = parse_number(opt, val);
        else if (opt == "--rope-scaling") c.rope_scaling = parse_rope_scaling(val);
        else if (opt == "--plant-super-weight") c.plant = parse_planted_super_weight(val);
        else if (opt == "--attn-softcap") c.attn_softcap = parse_number(opt, val);
        else if (opt == "--final-softcap") c.final_softcap = parse_number(opt, val);
        else if (opt == "--residual-scale") c.residual_scale = parse_number(opt, val);
        else if (opt == "--logit-scale") c.logit_scale = parse_number(opt, val);
        else throw ConfigError("unknown option '" + opt + "' (see --help)");
    }
    return cl;
}

std::vector<std::string> split_words(const std::string& line) {
    std::vector<std::string> words;
    std::istringstream in(line);
    for (std::string w; in >> w;) words.push_back(w);
    return words;
}

std::string usage(const std::string& default_vocab) {
    std::string archs;
    for (const auto& a : architectures()) archs += (archs.empty() ? "" : ", ") + a;
    archs += ", rwkv7 (RWKV-7: wkv heads of 64, lora ranks 16/12/8/20; --n-embd a multiple of 64)";
    return "usage: vkllm-random-model --out FILE.gguf [options]\n"
           "Writes a random-weight model with llama.cpp's tensor names and metadata.\n"
           "  --arch A              " + archs + " (default llama)\n"
           "  --out FILE            output GGUF file (required)\n"
           "  --seed S              weights are a function of the seed (default 0)\n"
           "  --name N              general.name (default random-<arch>)\n"
           "  --n-embd N --n-layer N --n-head N --n-head-kv N --n-ff N --n-ctx N\n"
           "                        sizes (defaults 64, 2, 4, 2, 160, 256)\n"
           "  --n-expert E          experts per layer (llama: Mixtral when given; qwen3moe, olmoe 16; gpt-oss, llama4 8)\n"
           "  --n-expert-used K     experts per token (default llama 2, qwen3moe/olmoe/gpt-oss 4, llama4 1)\n"
           "  --n-ff-exp F          one expert's FFN width (qwen3moe, gpt-oss, llama4; default --n-ff; others use --n-ff)\n"
           "  --moe-layer-step S    llama4: layer il is MoE when (il + 1) % S == 0, else dense (default 1: all)\n"
           "  --head-dim D          per-head size (default n_embd / n_head; deepseek2: qk_nope + qk_rope)\n"
           "deepseek2 (multi-head latent attention, DeepSeek MoE; defaults DeepSeek-V3's choices):\n"
           "  --rope-dims R         qk_rope_head_dim (below --head-dim; default half of it); --n-head-kv 1 required\n"
           "  --q-lora-rank Q       query compression rank (default 32; 0: attn_q, no compression)\n"
           "  --kv-lora-rank K      latent key/value rank (default 16)\n"
           "  --v-head-dim V        value head size (default qk_nope = head_dim - rope dims)\n"
           "  --leading-dense N     leading dense layers before the MoE layers (default 1)\n"
           "  --n-expert-shared S   shared experts, width S * n_ff_exp (default 1)\n"
           "  --expert-groups G:U   route within the U best of G expert groups (default none)\n"
           "  --expert-gating F     sigmoid (with the exp_probs_b selection bias) or softmax (default sigmoid)\n"
           "  --expert-weights-norm 0|1   renormalise the chosen weights (default 1)\n"
           "  --expert-weights-scale S    multiply the chosen weights (default 2.5)\n"
           "  --yarn-log-multiplier M     rope.scaling.yarn_log_multiplier, 0.1 * mscale_all_dim (with yarn)\n"
           "mamba2 (selective state space; no attention, no FFN):\n"
           "  --ssm-conv K          ssm.conv_kernel, the short convolution's taps (default 4)\n"
           "  --ssm-inner N         ssm.inner_size, d_inner (default 2 * n_embd)\n"
           "  --ssm-state N         ssm.state_size, d_state (default 16)\n"
           "  --ssm-head-dim P      SSM head size; ssm.time_step_rank = d_inner / P heads (default 16)\n"
           "  --ssm-groups G        ssm.group_count, B/C groups dividing the heads (default 1)\n"
           "mamba (Mamba-1): --ssm-conv, --ssm-state as above, d_inner 2 * n_embd, and\n"
           "  --ssm-dt-rank R       ssm.time_step_rank, the rank of dt's projection (default ceil(n_embd / 16))\n"
           "  --ssm-dt-b-c-rms      ssm.dt_b_c_rms: unweighted RMS norms of dt, B and C (Falcon-Mamba)\n"
           "nemotron_h, granitehybrid (hybrids: the mamba2 options, plus attention and FFN layers):\n"
           "  --layers P            one character per layer: M Mamba-2, * attention, - an FFN alone\n"
           "                        (nemotron_h; granitehybrid has an FFN after every layer)\n"
           "                        (default nemotron_h M*-M, granitehybrid M*M, repeated to --n-layer)\n"
           "falcon-h1 (attention and the Mamba-2 mixer side by side in every layer): the mamba2 options\n"
           "lfm2 (short convolutions and attention):\n"
           "  --layers P            one character per layer: C a short convolution, * attention\n"
           "                        (an FFN after every layer; default C*, repeated to --n-layer)\n"
           "  --conv-l-cache L      shortconv.l_cache, the short convolution's taps (default 3)\n"
           "qwen35, qwen35moe, qwen3next (Gated DeltaNet and gated attention; the last two with\n"
           "experts and a gated shared expert of n_ff, qwen3next with one ssm_ba per key head):\n"
           "  --layers P            one character per layer: D Gated DeltaNet, * attention, the * every\n"
           "                        N-th layer (full_attention_interval N; default D*, repeated)\n"
           "  --ssm-state N         key and value head size (default 16); --ssm-inner the value heads'\n"
           "                        width, --ssm-groups the key heads, --ssm-conv as for mamba2\n"
           "  --rope-dims R         rotated dims per head (default the head size; smaller: phi3, qwen35)\n"
           "  --type T              matrices: F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q2_K..Q6_K MXFP4\n"
           "                        (default F32; rows the block does not divide fall back\n"
           "                        as llama.cpp's quantizer does, else F16)\n"
           "  --expert-type T       the stacked expert matrices (*_exps): T instead of --type\n"
           "  --vocab-from FILE     GGUF whose tokenizer.* metadata is copied\n"
           "                        (default " + default_vocab + ")\n"
           "  --tied                no output.weight: logits use token_embd\n"
           "  --two-norms           falcon: Falcon-40B's block (attention reads attn_norm_2 of the\n"
           "                        layer input, the MLP attn_norm; default the 7B's one norm)\n"
           "  --threads N           tensors drawn and encoded at once (default 0: one per core;\n"
           "                        the file is byte-identical for any N)\n"
           "  --rope-freq-base B    (default: the architecture's usual base)\n"
           "  --rope-scaling S      linear:F | yarn:F:ORIG | llama3:F:LOW:HIGH:ORIG | longrope:ORIG (phi3)\n"
           "  --sliding-window W    window of the sliding-window layers (gemma2, gemma3, gpt-oss;\n"
           "                        llama4: written only when given; llama.cpp chunks by 8192 whatever it is)\n"
           "  --attn-softcap C      attention-logit soft-cap (gemma2; default 50)\n"
           "  --final-softcap C     final-logit soft-cap (gemma2, default 30; gemma3, default none)\n"
           "  --residual-scale S    granitehybrid: each block's output times S before the residual add\n"
           "  --logit-scale S       granitehybrid: logits divided by S (both default: not written)\n"
           "  --plant-super-weight LAYER:ROW:COL[:EXPERT]\n"
           "                        plant a super weight ffn_down[ROW, COL] in LAYER (MoE: in EXPERT, default 0)\n"
           "                        that makes a massive activation in channel ROW on the BOS token\n"
           "                        (llama, qwen2, qwen3, smollm3, qwen3moe, olmoe; see README.md)\n";
}

}  // namespace vkllm::random_model
