// The tiled product of the prompt matmuls (matmul.comp, moe_matmul.comp): a workgroup computes a
// tile of BM weight rows x BN columns (tokens, or one expert's pairs) over K = n_in. Each step it
// decodes a BM x BK slice of W and loads a BN x BK slice of the inputs into shared memory, then
// multiplies the two slices. Two kernels:
// - scalar (default): fp32 slices; every thread accumulates a TM x TN register tile from vec4
//   reads of shared memory (four rows or columns per read; a thread's rows are TM/4 groups of 4,
//   spread so that a subgroup's reads are contiguous);
// - COOPMAT (GL_NV_cooperative_matrix, tensor cores): the slices are stored as fp16 and each
//   subgroup multiplies WM x BK by BK x WN with CM x CN x CK cooperative matrices (a shape the
//   device lists), accumulating in fp32; a subgroup's results leave through a CM x CN staging
//   tile in shared memory, so that partial tiles are written element by element.
// PREFETCH (register double buffering): each thread reads its share of the next step's slices
// from memory into registers before the current step's product, so that the loads' latency
// hides behind the arithmetic; 0 reads each step's slices after the previous product. Both give
// the same sums (the slices in shared memory are the same).
//
// The includer enables the COOPMAT extensions, declares `layout(local_size_x_id = 0) in;`,
// includes this file before it uses the tile sizes, and defines (after it, or anywhere):
//   vec4 tile_w_quad(uint r, uint k)         elements k..k+3 of the tile's weight row r, zero past
//                                            the matrix's rows or its row's end
//   vec4 tile_x_quad(uint c, uint k)         elements k..k+3 of tile column c's input, likewise
//   void tile_store(uint r, uint c, float v) the result of tile row r and column c: called for
//                                            every (r, c) of the tile, the includer skips those
//                                            outside the output
// and then calls tile_product(tid, n_in) from main. Tile sizes are specialization constants the
// host chooses for the device (ops/matmul_tiles.cpp).

layout(constant_id = 0) const uint WG = 256u;        // threads per workgroup
layout(constant_id = 1) const uint BM = 64u;         // weight rows per tile
layout(constant_id = 2) const uint BN = 64u;         // columns per tile
layout(constant_id = 3) const uint BK = 16u;         // elements of K per step (a multiple of 4 dividing 32, or of 32)
#ifdef COOPMAT
layout(constant_id = 4) const uint WM = 32u;         // weight rows per subgroup (a multiple of CM)
layout(constant_id = 5) const uint WN = 32u;         // columns per subgroup (a multiple of CN)
layout(constant_id = 6) const uint CM = 16u;         // the cooperative matrix shape: A is CM x CK,
layout(constant_id = 7) const uint CN = 16u;         // B is CK x CN, the accumulator CM x CN
layout(constant_id = 8) const uint CK = 16u;         // (BK a multiple of CK)
layout(constant_id = 9) const uint PREFETCH = 0u;    // 1: the next step's slices read during this one's product
layout(constant_id = 10) const uint W_ALIGNED = 0u;  // 1: the weight rows in their 16-byte-aligned layout (dequant.glsl)
#else
layout(constant_id = 4) const uint TM = 4u;          // rows per thread (a multiple of 4)
layout(constant_id = 5) const uint TN = 4u;          // columns per thread (a multiple of 4)
layout(constant_id = 6) const uint PREFETCH = 0u;    // as above
layout(constant_id = 7) const uint W_ALIGNED = 0u;   // as above
#endif

vec4 tile_w_quad(uint r, uint k);
vec4 tile_x_quad(uint c, uint k);
void tile_store(uint r, uint c, float v);

// A slice's quads (4 elements of K) and each thread's share of them.
const uint W_QUADS = BM * (BK / 4u), X_QUADS = BN * (BK / 4u);
const uint W_PER_THREAD = (W_QUADS + WG - 1u) / WG, X_PER_THREAD = (X_QUADS + WG - 1u) / WG;
vec4 w_reg[W_PER_THREAD];  // this thread's quads of the slices, between memory and shared memory
vec4 x_reg[X_PER_THREAD];

// Quad `idx` of a slice: its row (or column) and its quad of K. The scalar kernel gives
// consecutive threads consecutive rows (its shared stores are then contiguous); the tensor-core
// kernel gives them consecutive quads of one row (contiguous weight bytes).
void quad_coords(uint idx, uint rows, out uint r, out uint kq) {
#ifdef COOPMAT
    r = idx / (BK / 4u);
    kq = idx % (BK / 4u);
#else
    r = idx % rows;
    kq = idx / rows;
#endif
}

// The kernel's shared-memory slices (below): quad kq of weight row r, of input column c.
void store_w_quad(uint r, uint kq, vec4 v);
void store_x_quad(uint c, uint kq, vec4 v);

// Writes this thread's quads of the slices from w_reg and x_reg into shared memory.
void store_slices(uint tid) {
    [[unroll]] for (uint i = 0u; i < W_PER_THREAD; ++i) {
        const uint idx = tid + i * WG;
        uint r, kq;
        quad_coords(idx, BM, r, kq);
        if (idx < W_QUADS) store_w_quad(r, kq, w_reg[i]);
    }
    [[unroll]] for (uint i = 0u; i < X_PER_THREAD; ++i) {
        const uint idx = tid + i * WG;
        uint c, kq;
        quad_coords(idx, BN, c, kq);
        if (idx < X_QUADS) store_x_quad(c, kq, x_reg[i]);
    }
}

// Reads this thread's quads of the slices at K offset k0 into w_reg and x_reg.
void load_slices(uint tid, uint k0) {
    [[unroll]] for (uint i = 0u; i < W_PER_THREAD; ++i) {
        const uint idx = tid + i * WG;
        uint r, kq;
        quad_coords(idx, BM, r, kq);
        if (idx < W_QUADS) w_reg[i] = tile_w_quad(r, k0 + 4u * kq);
    }
    [[unroll]] for (uint i = 0u; i < X_PER_THREAD; ++i) {
        const uint idx = tid + i * WG;
        uint c, kq;
        quad_coords(idx, BN, c, kq);
        if (idx < X_QUADS) x_reg[i] = tile_x_quad(c, k0 + 4u * kq);
    }
}

#ifdef COOPMAT
// Shared rows are padded by 8 halves: a row stays a multiple of 16 bytes (cooperative loads
// want 16-byte aligned rows) and consecutive rows start in different banks.
const uint LDS = BK + 8u;
shared float16_t w_s[BM * LDS];  // [BM][BK] weights, row-major (A)
shared float16_t x_s[BN * LDS];  // [BN][BK] inputs: B = x_s^T, read column-major
shared float c_s[BM / WM * (BN / WN) * CM * CN];  // a CM x CN staging tile per subgroup

void store_w_quad(uint r, uint kq, vec4 v) {
    [[unroll]] for (uint e = 0u; e < 4u; ++e) w_s[r * LDS + 4u * kq + e] = float16_t(v[e]);
}
void store_x_quad(uint c, uint kq, vec4 v) {
    [[unroll]] for (uint e = 0u; e < 4u; ++e) x_s[c * LDS + 4u * kq + e] = float16_t(v[e]);
}

void tile_product(uint tid, uint n_in) {
    const uint sg = gl_SubgroupID;                 // subgroups tile the block as (BM / WM) x (BN / WN)
    const uint sm = (sg % (BM / WM)) * WM, sn = (sg / (BM / WM)) * WN;
    const uint FM = WM / CM, FN = WN / CN;         // accumulators per subgroup, by rows and columns

    fcoopmatNV<32, gl_ScopeSubgroup, CM, CN> acc[FM * FN];
    [[unroll]] for (uint i = 0u; i < FM * FN; ++i) acc[i] = fcoopmatNV<32, gl_ScopeSubgroup, CM, CN>(0.0);

    for (uint k0 = 0u; k0 < n_in; k0 += BK) {
        if (PREFETCH == 0u || k0 == 0u) load_slices(tid, k0);
        store_slices(tid);
        barrier();
        if (PREFETCH != 0u && k0 + BK < n_in) load_slices(tid, k0 + BK);
        [[unroll]] for (uint kk = 0u; kk < BK; kk += CK) {
            fcoopmatNV<16, gl_ScopeSubgroup, CK, CN> b[FN];
            [[unroll]] for (uint j = 0u; j < FN; ++j)
                coopMatLoadNV(b[j], x_s, (sn + j * CN) * LDS + kk, LDS, true);
            [[unroll]] for (uint i = 0u; i < FM; ++i) {
                fcoopmatNV<16, gl_ScopeSubgroup, CM, CK> a;
                coopMatLoadNV(a, w_s, (sm + i * CM) * LDS + kk, LDS, false);
                [[unroll]] for (uint j = 0u; j < FN; ++j) acc[i * FN + j] = coopMatMulAddNV(a, b[j], acc[i * FN + j]);
            }
        }
        barrier();
    }

    // Each accumulator goes to the subgroup's staging tile column-major (a column's CM rows
    // contiguous), then its lanes hand the elements to tile_store.
    const uint stage = sg * CM * CN;
    [[unroll]] for (uint i = 0u; i < FM; ++i) {
        [[unroll]] for (uint j = 0u; j < FN; ++j) {
            coopMatStoreNV(acc[i * FN + j], c_s, stage, CM, true);
            subgroupBarrier();
            for (uint e = gl_SubgroupInvocationID; e < CM * CN; e += gl_SubgroupSize)
                tile_store(sm + i * CM + e % CM, sn + j * CN + e / CM, c_s[stage + e]);
            subgroupBarrier();
        }
    }
}
#else
shared vec4 w_tile[BK * BM / 4u];  // [BK][BM] weights, k-major
shared vec4 x_tile[BK * BN / 4u];  // [BK][BN] inputs, k-major

void store_w_quad(uint r, uint kq, vec4 v) {
    [[unroll]] for (uint e = 0u; e < 4u; ++e) w_tile[((4u * kq + e) * BM + r) >> 2][r & 3u] = v[e];
}
void store_x_quad(uint c, uint kq, vec4 v) {
    [[unroll]] for (uint e = 0u; e < 4u; ++e) x_tile[((4u * kq + e) * BN + c) >> 2][c & 3u] = v[e];
}

void tile_product(uint tid, uint n_in) {
    const uint tx = tid % (BM / TM), ty = tid / (BM / TM);
    // Thread rows: g * RG + 4 tx + c (g < TM/4, c < 4); columns: h * TG + 4 ty + c.
    const uint RG = 4u * BM / TM, TG = 4u * BN / TN;

    vec4 acc[TN * TM / 4u];  // [TN][TM/4]: acc[j * TM/4 + g][c] is row g RG + 4 tx + c, column j
    [[unroll]] for (uint i = 0u; i < TN * TM / 4u; ++i) acc[i] = vec4(0.0);

    for (uint k0 = 0u; k0 < n_in; k0 += BK) {
        if (PREFETCH == 0u || k0 == 0u) load_slices(tid, k0);
        store_slices(tid);
        barrier();
        if (PREFETCH != 0u && k0 + BK < n_in) load_slices(tid, k0 + BK);
        for (uint kk = 0u; kk < BK; ++kk) {
            vec4 a[TM / 4u], b[TN / 4u];
            [[unroll]] for (uint g = 0u; g < TM / 4u; ++g) a[g] = w_tile[(kk * BM + g * RG) / 4u + tx];
            [[unroll]] for (uint h = 0u; h < TN / 4u; ++h) b[h] = x_tile[(kk * BN + h * TG) / 4u + ty];
            [[unroll]] for (uint h = 0u; h < TN / 4u; ++h)
                [[unroll]] for (uint c = 0u; c < 4u; ++c)
                    [[unroll]] for (uint g = 0u; g < TM / 4u; ++g)
                        acc[(4u * h + c) * (TM / 4u) + g] += a[g] * b[h][c];
        }
        barrier();
    }

    [[unroll]] for (uint j = 0u; j < TN; ++j) {
        const uint col = (j / 4u) * TG + 4u * ty + (j % 4u);
        [[unroll]] for (uint g = 0u; g < TM / 4u; ++g) {
            [[unroll]] for (uint c = 0u; c < 4u; ++c)
                tile_store(g * RG + 4u * tx + c, col, acc[j * (TM / 4u) + g][c]);
        }
    }
}
#endif
