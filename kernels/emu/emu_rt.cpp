// emu_rt.cpp: the fiber scheduler of emu.h, a host-memory CUDA runtime (the calls
// the backend makes), and a naive column-major cuBLASLt that checks the shapes and
// leading dimensions it is given (this is what tests gemm_cublaslt.c's row-major
// to column-major mapping). EMU_ORDER=1 (reverse) or 2 (shuffled) changes the
// order in which fibers run between barriers, so a missing __syncthreads shows.
// Launch limits are checked: block <= 1024 threads, grid y/z <= 65535, dynamic
// shared memory <= 48 KiB. Fibers persist across blocks and launches (one per thread
// index): after its start (makecontext) a fiber is switched with _setjmp/_longjmp,
// which save no signal mask, so a switch costs no system call.
#include "emu.h"
#include <mpi.h>
#include <cublasLt.h>
#include <csetjmp>
#include <ucontext.h>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;
float emu_smem[1 << 16];

struct Fiber { ucontext_t ctx; jmp_buf jb; int started, done, wait; };
static std::vector<Fiber> F;
static std::vector<std::vector<char>> stacks;
static int cur, nthr;
static ucontext_t sched;
static jmp_buf sched_jb;
static const std::function<void()> *body;
static uint64_t xch[1024];

static void set_tid(int t) {
  threadIdx.x = t % blockDim.x;
  threadIdx.y = (t / blockDim.x) % blockDim.y;
  threadIdx.z = t / (blockDim.x * blockDim.y);
}
static void yield_to_sched(int me) { if (!_setjmp(F[me].jb)) _longjmp(sched_jb, 1); }
// Runs the body once per block the scheduler resumes it for.
static void entry() {
  int me = cur;
  for (;;) {
    (*body)();
    F[me].done = 1;
    yield_to_sched(me);
  }
}
static void block_wait(int kind) { F[cur].wait = kind; yield_to_sched(cur); }
static void resume(unsigned t) {
  cur = (int)t;
  set_tid((int)t);
  if (_setjmp(sched_jb)) return;
  if (F[t].started) _longjmp(F[t].jb, 1);
  F[t].started = 1;
  swapcontext(&sched, &F[t].ctx); /* first run only; it comes back by _longjmp */
}
void __syncthreads() { block_wait(1); }
void __syncwarp(unsigned) { block_wait(2); }
uint64_t emu_exchange(uint64_t v, int src) {
  int lane = cur & 31, base = cur - lane;
  if (base + 32 > nthr) { fprintf(stderr, "EMU: shuffle in a partial warp\n"); abort(); }
  xch[cur] = v;
  block_wait(2);
  uint64_t r = xch[base + src];
  block_wait(2);
  return r;
}

long emu_blocks_run = 0;
void emu_run(dim3 g, dim3 b, size_t smem, const std::function<void()> &bd) {
  unsigned n = b.x * b.y * b.z;
  if (smem > 48 * 1024 || n > 1024 || n == 0 || g.y > 65535 || g.z > 65535 || g.x == 0 || g.y == 0 || g.z == 0) {
    fprintf(stderr, "EMU: bad launch grid %u,%u,%u block %u,%u,%u smem %zu\n", g.x, g.y, g.z, b.x, b.y, b.z, smem);
    abort();
  }
  gridDim = g; blockDim = b; body = &bd; nthr = (int)n;
  if (stacks.size() < n) stacks.resize(n, std::vector<char>(256 * 1024));
  F.reserve(1024); /* never moves: an unstarted fiber's ucontext_t points into itself */
  for (unsigned t = (unsigned)F.size(); t < n; t++) {
    F.emplace_back();
    Fiber &f = F.back();
    f.started = 0;
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = stacks[t].data();
    f.ctx.uc_stack.ss_size = stacks[t].size();
    f.ctx.uc_link = &sched;
    makecontext(&f.ctx, entry, 0);
  }
  for (unsigned z = 0; z < g.z; z++)
    for (unsigned y = 0; y < g.y; y++)
      for (unsigned x = 0; x < g.x; x++) {
        blockIdx.x = x; blockIdx.y = y; blockIdx.z = z;
        emu_blocks_run++;
        // dynamic shared memory starts as garbage (NaN) each block
        memset(emu_smem, 0xff, smem);
        for (unsigned t = 0; t < n; t++) F[t].done = F[t].wait = 0;
        for (;;) {
          int live = 0;
          static int order = getenv("EMU_ORDER") ? atoi(getenv("EMU_ORDER")) : 0;
          static unsigned seed = 12345;
          std::vector<unsigned> ord(n);
          for (unsigned t = 0; t < n; t++) ord[t] = order == 1 ? n - 1 - t : t;
          if (order == 2) for (unsigned t = n - 1; t > 0; t--) { seed = seed * 1103515245u + 12345u; std::swap(ord[t], ord[(seed >> 8) % (t + 1)]); }
          for (unsigned oi = 0; oi < n; oi++) { unsigned t = ord[oi];
            if (!F[t].done && F[t].wait == 0) resume(t); }
          for (unsigned t = 0; t < n; t++) live += !F[t].done;
          if (!live) break;
          int released = 0;
          for (unsigned w = 0; w * 32 < n; w++) {
            int l2 = 0, lv = 0;
            for (unsigned t = w * 32; t < n && t < w * 32 + 32; t++) if (!F[t].done) { lv++; l2 += F[t].wait == 2; }
            if (lv && l2 == lv) {
              if (lv < 32 && (w * 32 + 32 <= n)) { fprintf(stderr, "EMU: warp sync with exited lanes (block %u,%u,%u warp %u)\n", x, y, z, w); abort(); }
              for (unsigned t = w * 32; t < n && t < w * 32 + 32; t++) F[t].wait = 0;
              released = 1;
            }
          }
          if (released) continue;
          int l1 = 0;
          for (unsigned t = 0; t < n; t++) if (!F[t].done) l1 += F[t].wait == 1;
          if (l1 == live) { for (unsigned t = 0; t < n; t++) F[t].wait = 0; continue; }
          fprintf(stderr, "EMU: deadlock in block %u,%u,%u (live %d, at syncthreads %d)\n", x, y, z, live, l1);
          abort();
        }
      }
}

// ---- host-memory runtime ----
extern "C" {
cudaError_t cudaMalloc(void **p, size_t n) {  // a size the host cannot hold fails as on a device
  if (!(*p = malloc(n ? n : 1))) return cudaErrorMemoryAllocation;
  memset(*p, 0xff, n); return cudaSuccess; }
cudaError_t cudaFree(void *p) { free(p); return cudaSuccess; }
cudaError_t cudaMallocAsync(void **p, size_t n, cudaStream_t) { return cudaMalloc(p, n); }
cudaError_t cudaFreeAsync(void *p, cudaStream_t) { free(p); return cudaSuccess; }
cudaError_t cudaMemset(void *p, int v, size_t n) { memset(p, v, n); return cudaSuccess; }
cudaError_t cudaMemcpy(void *d, const void *s, size_t n, enum cudaMemcpyKind) { memmove(d, s, n); return cudaSuccess; }
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
const char *cudaGetErrorString(cudaError_t) { return "emu error"; }
// EMU_DEVICES: the devices reported (default 1; a multi-rank run of a test that wants one each)
cudaError_t cudaGetDeviceCount(int *n) { const char *e = getenv("EMU_DEVICES"); *n = e ? atoi(e) : 1; return cudaSuccess; }
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int) {
  memset(p, 0, sizeof *p); strcpy(p->name, "EMU (kernels on the CPU)");
  p->multiProcessorCount = 1; p->totalGlobalMem = (size_t)1 << 30; return cudaSuccess; }
// events: host wall-clock stamps (the work is synchronous)
cudaError_t cudaEventCreate(cudaEvent_t *e) { *e = (cudaEvent_t)calloc(1, sizeof(double)); return cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) {
  timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); *(double *)e = ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6; return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) { *ms = (float)(*(double *)b - *(double *)a); return cudaSuccess; }
cudaError_t cudaEventDestroy(cudaEvent_t e) { free(e); return cudaSuccess; }
}

// ---- streams (the work is synchronous) and NCCL over MPI ----
// A communicator is an MPI communicator of the same ranks in the same order: one rank
// (MPI_COMM_SELF), or any group of world ranks. ncclCommInitRank finds its group through
// the unique id, which names the world rank that made it: every other member sends its
// (NCCL rank, world rank) there, that rank sends the ordered list back, and the members
// alone make the communicator (MPI_Comm_create_group), as NCCL's bootstrap involves no
// other rank. ncclCommSplit is MPI_Comm_split of the parent's communicator.
struct ncclComm { MPI_Comm c; int n; };
struct EmuId { int magic, root_world, seq; };
static const int EMU_ID_MAGIC = 0x454d5531, EMU_TAG_BASE = 32000;  // tags 32000..32699 (<= MPI_TAG_UB)
static int emu_device;
extern "C" {
cudaError_t cudaSetDevice(int d) { emu_device = d; return cudaSuccess; }
cudaError_t cudaGetDevice(int *d) { *d = emu_device; return cudaSuccess; }
cudaError_t cudaDeviceGetPCIBusId(char *id, int len, int d) { snprintf(id, (size_t)len, "0000:%02x:00.0", d); return cudaSuccess; }
cudaError_t cudaStreamCreate(cudaStream_t *s) { *s = (cudaStream_t)malloc(8); return cudaSuccess; }
cudaError_t cudaStreamDestroy(cudaStream_t s) { free(s); return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamQuery(cudaStream_t) { return cudaSuccess; }
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  static int seq;
  EmuId e = {EMU_ID_MAGIC, 0, seq++ % 700};
  MPI_Comm_rank(MPI_COMM_WORLD, &e.root_world);
  memset(id, 0, sizeof *id);
  memcpy(id, &e, sizeof e);
  return ncclSuccess;
}
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId uid, int rank) {
  *comm = new ncclComm{MPI_COMM_SELF, nranks};
  if (nranks == 1) return ncclSuccess;
  EmuId e;
  memcpy(&e, &uid, sizeof e);
  if (e.magic != EMU_ID_MAGIC) { fprintf(stderr, "EMU: ncclCommInitRank: not an id of ncclGetUniqueId\n"); abort(); }
  int wr = 0, tag = EMU_TAG_BASE + e.seq;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  std::vector<int> w((size_t)nranks, -1);
  if (wr == e.root_world) {
    w[(size_t)rank] = wr;
    for (int i = 1; i < nranks; i++) {
      int pr[2];
      MPI_Recv(pr, 2, MPI_INT, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      w[(size_t)pr[0]] = pr[1];
    }
    for (int i = 0; i < nranks; i++)
      if (w[(size_t)i] != wr) MPI_Send(w.data(), nranks, MPI_INT, w[(size_t)i], tag, MPI_COMM_WORLD);
  } else {
    int pr[2] = {rank, wr};
    MPI_Send(pr, 2, MPI_INT, e.root_world, tag, MPI_COMM_WORLD);
    MPI_Recv(w.data(), nranks, MPI_INT, e.root_world, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Group world, g;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  MPI_Group_incl(world, nranks, w.data(), &g);
  MPI_Comm_create_group(MPI_COMM_WORLD, g, tag, &(*comm)->c);
  MPI_Group_free(&g);
  MPI_Group_free(&world);
  return ncclSuccess;
}
ncclResult_t ncclCommSplit(ncclComm_t parent, int color, int key, ncclComm_t *out, ncclConfig_t *) {
  MPI_Comm c;
  MPI_Comm_split(parent->c, color == NCCL_SPLIT_NOCOLOR ? MPI_UNDEFINED : color, key, &c);
  *out = NULL;
  if (c == MPI_COMM_NULL) return ncclSuccess;
  int n = 0;
  MPI_Comm_size(c, &n);
  *out = new ncclComm{c, n};
  return ncclSuccess;
}
ncclResult_t ncclCommDestroy(ncclComm_t c) {
  if (c->c != MPI_COMM_SELF) MPI_Comm_free(&c->c);
  delete c;
  return ncclSuccess;
}
ncclResult_t ncclCommAbort(ncclComm_t c) { return ncclCommDestroy(c); }
ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t *e) { *e = ncclSuccess; return ncclSuccess; }
const char *ncclGetErrorString(ncclResult_t) { return "emu NCCL error"; }
ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t op,
                           ncclComm_t c, cudaStream_t) {
  if (t != ncclFloat32 || (op != ncclSum && op != ncclAvg)) {
    fprintf(stderr, "EMU: ncclAllReduce: only fp32 sum/avg are emulated\n");
    abort();
  }
  float *x = (float *)r;
  if (s != r) memmove(r, s, sizeof(float) * n);
  MPI_Allreduce(MPI_IN_PLACE, x, (int)n, MPI_FLOAT, MPI_SUM, c->c);
  if (op == ncclAvg) for (size_t i = 0; i < n; i++) x[i] /= (float)c->n;
  return ncclSuccess;
}
ncclResult_t ncclGroupStart(void) { return ncclSuccess; }  // each call below runs at once
ncclResult_t ncclGroupEnd(void) { return ncclSuccess; }
ncclResult_t ncclReduce(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t op,
                        int root, ncclComm_t c, cudaStream_t) {
  if (t != ncclFloat32 || op != ncclSum) { fprintf(stderr, "EMU: ncclReduce: only fp32 sum is emulated\n"); abort(); }
  int me = 0;
  MPI_Comm_rank(c->c, &me);
  if (me == root) {
    if (s != r) memmove(r, s, sizeof(float) * n);
    MPI_Reduce(MPI_IN_PLACE, r, (int)n, MPI_FLOAT, MPI_SUM, root, c->c);
  } else {
    MPI_Reduce(s, NULL, (int)n, MPI_FLOAT, MPI_SUM, root, c->c);
  }
  return ncclSuccess;
}
ncclResult_t ncclBroadcast(const void *s, void *r, size_t n, ncclDataType_t t, int root,
                           ncclComm_t c, cudaStream_t) {
  if (t != ncclFloat32) { fprintf(stderr, "EMU: ncclBroadcast: only fp32 is emulated\n"); abort(); }
  int me = 0;
  MPI_Comm_rank(c->c, &me);
  if (me == root && s != r) memmove(r, s, sizeof(float) * n);  // sendbuff is read on root only
  MPI_Bcast(r, (int)n, MPI_FLOAT, root, c->c);
  return ncclSuccess;
}
}

// ---- naive cuBLASLt (column-major, checks the shapes) ----
struct Desc { int ta, tb; cublasComputeType_t ct; };
struct Lay { cudaDataType t; uint64_t r, c; int64_t ld; };
extern "C" {
cublasStatus_t cublasLtCreate(cublasLtHandle_t *h) { *h = (cublasLtHandle_t)malloc(8); return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) { free(h); return CUBLAS_STATUS_SUCCESS; }
const char *cublasLtGetStatusString(cublasStatus_t) { return "emu cublasLt error"; }
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t ct, cudaDataType_t) {
  *d = (cublasLtMatmulDesc_t)calloc(1, sizeof(cublasLtMatmulDescOpaque_t)); ((Desc *)*d)->ct = ct; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const void *buf, size_t) {
  int v = *(const int *)buf;
  if (a == CUBLASLT_MATMUL_DESC_TRANSA) ((Desc *)d)->ta = v == CUBLAS_OP_T;
  else if (a == CUBLASLT_MATMUL_DESC_TRANSB) ((Desc *)d)->tb = v == CUBLAS_OP_T;
  else return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) { free(d); return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType t, uint64_t r, uint64_t c, int64_t ld) {
  if (ld < (int64_t)r) { fprintf(stderr, "EMU cublasLt: ld %ld < rows %lu\n", (long)ld, (unsigned long)r); return CUBLAS_STATUS_INVALID_VALUE; }
  *l = (cublasLtMatrixLayout_t)calloc(1, sizeof(cublasLtMatrixLayoutOpaque_t)); *(Lay *)*l = Lay{t, r, c, ld}; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) { free(l); return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) { *p = (cublasLtMatmulPreference_t)calloc(1, 64); return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t, const void *, size_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) { free(p); return CUBLAS_STATUS_SUCCESS; }
long emu_heuristic_calls = 0;
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
    cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int, cublasLtMatmulHeuristicResult_t r[], int *n) {
  emu_heuristic_calls++; memset(&r[0], 0, sizeof r[0]);
  const char *na = getenv("EMU_NO_ALGO");  // "status": answer as cuBLASLt does with no heuristic at all
  if (na && !strcmp(na, "status")) return CUBLAS_STATUS_NOT_SUPPORTED;
  *n = na ? 0 : 1; return CUBLAS_STATUS_SUCCESS; }
static double ld_el(const void *p, cudaDataType t, size_t i) {
  if (t == CUDA_R_32F) return ((const float *)p)[i];
  uint32_t w = (uint32_t)((const uint16_t *)p)[i] << 16; float f; memcpy(&f, &w, 4); return f; }
cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t cd, const void *alpha, const void *A, cublasLtMatrixLayout_t Ad,
    const void *B, cublasLtMatrixLayout_t Bd, const void *beta, const void *C, cublasLtMatrixLayout_t Cd, void *D,
    cublasLtMatrixLayout_t Dd, const cublasLtMatmulAlgo_t *, void *, size_t, cudaStream_t) {
  Desc *d = (Desc *)cd; Lay a = *(Lay *)Ad, b = *(Lay *)Bd, c = *(Lay *)Cd, dd = *(Lay *)Dd;
  uint64_t m = dd.r, n = dd.c, k = d->ta ? a.r : a.c;
  bool ok = (d->ta ? a.c : a.r) == m && (d->tb ? b.r : b.c) == n && (d->tb ? b.c : b.r) == k && c.r == m && c.c == n && C == D;
  if (!ok || d->ct != CUBLAS_COMPUTE_32F) { fprintf(stderr, "EMU cublasLt: inconsistent shapes m=%lu n=%lu k=%lu\n", (unsigned long)m, (unsigned long)n, (unsigned long)k); return CUBLAS_STATUS_INVALID_VALUE; }
  float al = *(const float *)alpha, be = *(const float *)beta;
  float *Dp = (float *)D;
  for (uint64_t j = 0; j < n; j++)
    for (uint64_t i = 0; i < m; i++) {
      double s = 0;
      for (uint64_t p = 0; p < k; p++) {
        double x = ld_el(A, a.t, d->ta ? p + i * a.ld : i + p * a.ld);
        double y = ld_el(B, b.t, d->tb ? j + p * b.ld : p + j * b.ld);
        s += x * y;
      }
      float *o = Dp + i + j * dd.ld;
      *o = (float)(al * s + (be != 0 ? be * *o : 0.0));
    }
  return CUBLAS_STATUS_SUCCESS; }
}
