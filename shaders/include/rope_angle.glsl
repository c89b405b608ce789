// The rotation of pair j of a head at position p, as ggml's rope_yarn computes it (rope.comp's
// header gives the formulas): (cos, sin) of the angle, times mscale. Reads the includer's push
// constants n_pairs, flags (bit 1: freq_factors, bit 2: YaRN), log2_base, freq_scale,
// ext_factor, mscale, corr_low, corr_high, ff_shift and its freq_factors binding.
vec2 rope_cos_sin(int p, uint j) {
    const bool has_ff = (pc.flags & 2u) != 0u, yarn = (pc.flags & 4u) != 0u;
    float theta_extrap = float(p) * exp2(-float(j) / float(pc.n_pairs) * pc.log2_base);
    if (has_ff) theta_extrap /= freq_factors[pc.ff_shift + j];
    float theta = pc.freq_scale * theta_extrap;
    if (yarn) {
        const float ramp = 1.0 - clamp((float(j) - pc.corr_low) / max(0.001, pc.corr_high - pc.corr_low), 0.0, 1.0);
        const float mix = ramp * pc.ext_factor;
        theta = theta * (1.0 - mix) + theta_extrap * mix;
    }
    return vec2(cos(theta) * pc.mscale, sin(theta) * pc.mscale);
}
