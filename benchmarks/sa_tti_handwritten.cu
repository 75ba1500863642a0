// SA-TTI (space order 8, float32) fused by hand into one CUDA kernel: the design the fused
// nest printer is to reach, timed beside a two-kernel reference of the same arithmetic.
//
//   nvcc -O3 -arch=sm_90 -o /tmp/sa_tti_handwritten benchmarks/sa_tti_handwritten.cu
//   /tmp/sa_tti_handwritten 412 423 476 200 0 103 16   # time: reference, plain, tuned, rings
//   /tmp/sa_tti_handwritten 64 72 96 200 3 16 16       # check rings against the reference
//   ONLY=23 /tmp/sa_tti_handwritten 412 423 476 200    # time tuned and rings only
//
// Arguments: nx ny nz nt [mode] [planes] [tile rows] [rings' tile rows] [rings' planes]; mode 0
// times the kernels, 1, 2 and 3 check plain, tuned and rings against the reference (max
// |difference| over max |P| after nt steps, <= 1e-4 passes, exit 2 otherwise; DIAG=1 prints it
// per x-plane); planes is the chunk of x a block streams (0: all); tile rows 8, 12 or 16 (the
// tile is rows x 32); the rings kernel has 16 rows (its shared memory allows no more).
//
// All fused kernels stream along x (2.5D). "plain" and "tuned" (the first design, issue 34):
// a block's threads are the points where fluxes are needed, the tile and its y-halo as rows
// of 32, then warps for the z-halo columns. Each thread keeps P and M of its own column in a
// register queue along x (x-derivatives from registers), writes the queue's centre into one
// shared plane of P and M (y- and z-derivatives; the points around that no thread owns are
// loaded by all, zero outside the grid: shared memory is not cleared between blocks), and
// computes its point's fluxes. The y- and z-fluxes go to shared planes; the x-fluxes are
// scattered into per-thread accumulators of the divergence of the 8 planes they reach, to
// which the tile threads add the y/z divergence after a barrier; a plane is written 3 planes
// behind the one produced. Single shared planes, two barriers a plane. "tuned" adds: the
// medium's coefficient products precomputed per point, 32-bit offsets, the plane loop
// unrolled by 8 so that the queues rotate by renaming. "rings" (issue 47) is described above
// its kernel. Figures: docs/performance.md (2026-11-25, issue 34; 2026-11-27, issue 47).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>

#define CK(c) do { cudaError_t e = (c); if (e != cudaSuccess) { \
  printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)

constexpr int H = 8, HZ = 32;
constexpr float W1 = 1225.f/1024, W2 = -245.f/3072, W3 = 49.f/5120, W4 = -5.f/7168;
constexpr float F = 0.85f;

struct Dims { int nx, ny, nz; long sy, sx; };
__host__ __device__ inline long at(const Dims &d, int x, int y, int z)
{ return (long)(x + H)*d.sx + (long)(y + H)*d.sy + (z + HZ); }

struct Med { const float *eps, *dlt, *b, *cp, *sp, *st, *ct, *vb, *bv; };

// fluxes of P and M along axis i from gradients gp, gm and the medium of the point
__device__ __forceinline__ void coef(float eps, float dlt, float &a, float &c, float &e2)
{
  const float eta2 = 2.f*(eps - dlt)/(F + 2.f*eps);
  c = F*sqrtf(eta2)*sqrtf(1.f - eta2);   // cross
  a = 2.f*eps + F*eta2;
  e2 = F*eta2;
}

// ---------------------------------------------------------------- reference
__global__ void ref_flux(Dims d, const float *P, const float *M, Med m, float hx, float hy,
                         float hz, float *fp0, float *fp1, float *fp2, float *fm0, float *fm1,
                         float *fm2)
{
  const int z = blockIdx.x*blockDim.x + threadIdx.x, y = blockIdx.y, x = blockIdx.z;
  if (z >= d.nz) return;
  const long o = at(d, x, y, z);
  auto D = [&](const float *u, long s) {
    return W1*(u[o + s] - u[o]) + W2*(u[o + 2*s] - u[o - s]) + W3*(u[o + 3*s] - u[o - 2*s])
         + W4*(u[o + 4*s] - u[o - 3*s]); };
  float gp[3] = {D(P, d.sx)/hx, D(P, d.sy)/hy, D(P, 1)/hz};
  float gm[3] = {D(M, d.sx)/hx, D(M, d.sy)/hy, D(M, 1)/hz};
  const float n[3] = {m.st[o]*m.cp[o], m.st[o]*m.sp[o], m.ct[o]};
  float a, c, e2; coef(m.eps[o], m.dlt[o], a, c, e2);
  const float ngp = n[0]*gp[0] + n[1]*gp[1] + n[2]*gp[2];
  const float ngm = n[0]*gm[0] + n[1]*gm[1] + n[2]*gm[2];
  const float b = m.b[o], eps = m.eps[o];
  float *fp[3] = {fp0, fp1, fp2}, *fm[3] = {fm0, fm1, fm2};
  for (int i = 0; i < 3; ++i) {
    fp[i][o] = b*((1 + 2*eps)*gp[i] - a*n[i]*ngp + c*n[i]*ngm);
    fm[i][o] = b*((1 - F)*gm[i] + e2*n[i]*ngm + c*n[i]*ngp);
  }
}

__global__ void ref_update(Dims d, const float *P, const float *Pp, float *Pn, const float *M,
                           const float *Mp, float *Mn, Med m, float hx, float hy, float hz,
                           float dt2, const float *fp0, const float *fp1, const float *fp2,
                           const float *fm0, const float *fm1, const float *fm2)
{
  const int z = blockIdx.x*blockDim.x + threadIdx.x, y = blockIdx.y, x = blockIdx.z;
  if (z >= d.nz) return;
  const long o = at(d, x, y, z);
  auto D = [&](const float *u, long s) {
    return W1*(u[o] - u[o - s]) + W2*(u[o + s] - u[o - 2*s]) + W3*(u[o + 2*s] - u[o - 3*s])
         + W4*(u[o + 3*s] - u[o - 4*s]); };
  const float dp = D(fp0, d.sx)/hx + D(fp1, d.sy)/hy + D(fp2, 1)/hz;
  const float dm = D(fm0, d.sx)/hx + D(fm1, d.sy)/hy + D(fm2, 1)/hz;
  Pn[o] = (dt2*dp + (2*P[o] - Pp[o])*m.bv[o])*m.vb[o];
  Mn[o] = (dt2*dm + (2*M[o] - Mp[o])*m.bv[o])*m.vb[o];
}

// ---------------------------------------------------------------- fused_plain
// Tile TY x 32 (y rows, z columns). Threads: rows -4..TY+2 of 32 columns (tile and y-halo
// flux points), then warps for the z-halo flux points (TY rows x 7 columns).
template <int TY>
struct Shape {
  static constexpr int TZ = 32, RY = TY + 7, ZW = (TY*7 + 31)/32, NT = 32*(RY + ZW);
  static constexpr int MINB = TY <= 8 ? 2 : 1;
  static constexpr int PB = TZ + 14, PR = TY + 14, PL = PB*PR;        // P plane: rows -7..
  static constexpr int YB = TZ, YL = RY*TZ;                           // y-fluxes rows -4..TY+2
  static constexpr int ZB = TZ + 7, ZL = TY*ZB;                       // z-fluxes cols -4..TZ+2
  static constexpr int NB = (PL + NT - 1)/NT;
};

template <int TY>
__global__ void __launch_bounds__(Shape<TY>::NT, Shape<TY>::MINB)
fused_plain(Dims d, const float *__restrict__ P, const float *__restrict__ Pp, float *__restrict__ Pn,
      const float *__restrict__ M, const float *__restrict__ Mp, float *__restrict__ Mn, Med m,
      float ihx, float ihy, float ihz, float dt2, int planes)
{
  using S = Shape<TY>;
  __shared__ float sP[S::PL], sM[S::PL], sFyP[S::YL], sFyM[S::YL], sFzP[S::ZL], sFzM[S::ZL];
  const int tid = threadIdx.x + 32*threadIdx.y;
  int r, c, kind;   // 0 tile, 1 y-halo, 2 z-halo, 3 idle
  if ((int)threadIdx.y < S::RY) {
    r = (int)threadIdx.y - 4; c = threadIdx.x; kind = (r >= 0 && r < TY) ? 0 : 1;
  } else {
    const int e = tid - 32*S::RY;
    r = e/7; const int k = e%7; c = k < 4 ? k - 4 : S::TZ + k - 4;
    kind = e < TY*7 ? 2 : 3;
    if (kind == 3) { r = 0; c = 0; }
  }
  const int y0 = blockIdx.y*TY, z0 = blockIdx.x*S::TZ;
  const int y = y0 + r, z = z0 + c;
  const bool col = kind != 3 && y >= 0 && y < d.ny && z >= 0 && z < d.nz;
  const int xs = blockIdx.z*planes, xe = min(xs + planes, d.nx) - 1;
  const long o0 = at(d, 0, y, z);
  const int sp = (r + 7)*S::PB + (c + 7);
  // band: P-plane points not in the flux region, loaded by whoever
  int bsp[S::NB]; long bo[S::NB]; bool bin[S::NB];
  #pragma unroll
  for (int k = 0; k < S::NB; ++k) {
    const int e = tid + k*S::NT;
    const int rr = e/S::PB - 7, cc = e%S::PB - 7;
    const bool tilec = cc >= 0 && cc < S::TZ, tiler = rr >= 0 && rr < TY;
    const bool flux = (tilec && rr >= -4 && rr <= TY + 2) || (tiler && cc >= -4 && cc <= S::TZ + 2);
    const bool need = (tilec && rr >= -7 && rr <= TY + 6) || (rr >= -4 && rr <= TY + 2 && cc >= -3 && cc <= S::TZ + 3)
                   || (tiler && cc >= -7 && cc <= S::TZ + 6) || (rr >= -3 && rr <= TY + 3 && cc >= -4 && cc <= S::TZ + 2);
    const int gy = y0 + rr, gz = z0 + cc;
    const bool dom = gy >= 0 && gy < d.ny && gz >= 0 && gz < d.nz;
    bin[k] = e < S::PL && need && !flux && dom;
    bsp[k] = e < S::PL && need && !flux ? e : -1; bo[k] = at(d, 0, bin[k] ? gy : 0, bin[k] ? gz : 0);
  }
  // queues: q[k] = u[p - 3 + k]
  float qP[8], qM[8], aP[8], aM[8];
  const int pfirst = xs - 4;
  #pragma unroll
  for (int k = 0; k < 8; ++k) {
    const int x = pfirst - 4 + k;   // after the first shift q[k] = u[pfirst - 3 + k]
    qP[k] = col && x >= -H && x < d.nx + H ? P[o0 + (long)x*d.sx] : 0.f;
    qM[k] = col && x >= -H && x < d.nx + H ? M[o0 + (long)x*d.sx] : 0.f;
    aP[k] = 0.f; aM[k] = 0.f;
  }
  float bP[S::NB], bM[S::NB];
  #pragma unroll
  for (int k = 0; k < S::NB; ++k) {
    bP[k] = bin[k] ? P[bo[k] + (long)pfirst*d.sx] : 0.f;   // pfirst >= -4 > -H
    bM[k] = bin[k] ? M[bo[k] + (long)pfirst*d.sx] : 0.f;
  }
  for (int p = pfirst; p <= xe + 3; ++p) {
    // (1) queues, centre and band into the plane
    #pragma unroll
    for (int k = 0; k < 7; ++k) { qP[k] = qP[k + 1]; qM[k] = qM[k + 1]; }
    const int xn = p + 4;
    qP[7] = col && xn < d.nx + H ? P[o0 + (long)xn*d.sx] : 0.f;
    qM[7] = col && xn < d.nx + H ? M[o0 + (long)xn*d.sx] : 0.f;
    const bool pin = p >= 0 && p < d.nx;
    float eps = 0, dlt = 0, bb = 0, cp = 0, sph = 0, st = 0, ct = 0;
    if (col && pin) {
      const long o = o0 + (long)p*d.sx;
      eps = m.eps[o]; dlt = m.dlt[o]; bb = m.b[o]; cp = m.cp[o]; sph = m.sp[o]; st = m.st[o]; ct = m.ct[o];
    }
    if (kind != 3) { sP[sp] = qP[3]; sM[sp] = qM[3]; }
    #pragma unroll
    for (int k = 0; k < S::NB; ++k)
      if (bsp[k] >= 0) { sP[bsp[k]] = bP[k]; sM[bsp[k]] = bM[k]; }
    #pragma unroll
    for (int k = 0; k < S::NB; ++k) {
      bP[k] = bin[k] && p + 1 < d.nx + H ? P[bo[k] + (long)(p + 1)*d.sx] : 0.f;
      bM[k] = bin[k] && p + 1 < d.nx + H ? M[bo[k] + (long)(p + 1)*d.sx] : 0.f;
    }
    __syncthreads();
    // (2) fluxes at plane p
    float fxP = 0, fxM = 0;
    {
      float fyP = 0, fyM = 0, fzP = 0, fzM = 0;
      if (col && pin) {
        const float gx = (W1*(qP[4] - qP[3]) + W2*(qP[5] - qP[2]) + W3*(qP[6] - qP[1]) + W4*(qP[7] - qP[0]))*ihx;
        const float hx = (W1*(qM[4] - qM[3]) + W2*(qM[5] - qM[2]) + W3*(qM[6] - qM[1]) + W4*(qM[7] - qM[0]))*ihx;
        const int B = S::PB;
        const float gy = (W1*(sP[sp + B] - sP[sp]) + W2*(sP[sp + 2*B] - sP[sp - B]) + W3*(sP[sp + 3*B] - sP[sp - 2*B]) + W4*(sP[sp + 4*B] - sP[sp - 3*B]))*ihy;
        const float hy = (W1*(sM[sp + B] - sM[sp]) + W2*(sM[sp + 2*B] - sM[sp - B]) + W3*(sM[sp + 3*B] - sM[sp - 2*B]) + W4*(sM[sp + 4*B] - sM[sp - 3*B]))*ihy;
        const float gz = (W1*(sP[sp + 1] - sP[sp]) + W2*(sP[sp + 2] - sP[sp - 1]) + W3*(sP[sp + 3] - sP[sp - 2]) + W4*(sP[sp + 4] - sP[sp - 3]))*ihz;
        const float hz = (W1*(sM[sp + 1] - sM[sp]) + W2*(sM[sp + 2] - sM[sp - 1]) + W3*(sM[sp + 3] - sM[sp - 2]) + W4*(sM[sp + 4] - sM[sp - 3]))*ihz;
        const float n0 = st*cp, n1 = st*sph, n2 = ct;
        float a, cr, e2; coef(eps, dlt, a, cr, e2);
        const float ngp = n0*gx + n1*gy + n2*gz, ngm = n0*hx + n1*hy + n2*hz;
        const float sp_ = bb*(cr*ngm - a*ngp), sm_ = bb*(e2*ngm + cr*ngp);
        const float kp = bb*(1 + 2*eps), km = bb*(1 - F);
        fxP = kp*gx + n0*sp_; fxM = km*hx + n0*sm_;
        fyP = kp*gy + n1*sp_; fyM = km*hy + n1*sm_;
        fzP = kp*gz + n2*sp_; fzM = km*hz + n2*sm_;
      }
      if (kind <= 1) { sFyP[(r + 4)*S::YB + c] = fyP; sFyM[(r + 4)*S::YB + c] = fyM; }
      if (kind == 0 || kind == 2) { sFzP[r*S::ZB + c + 4] = fzP; sFzM[r*S::ZB + c + 4] = fzM; }
    }
    // x-fluxes into the accumulators of planes p-3..p+4 (a[j]: plane p-3+j)
    fxP *= ihx; fxM *= ihx;
    aP[3] += W1*fxP; aP[2] += W2*fxP; aP[1] += W3*fxP; aP[0] += W4*fxP;
    aP[4] -= W1*fxP; aP[5] -= W2*fxP; aP[6] -= W3*fxP; aP[7] -= W4*fxP;
    aM[3] += W1*fxM; aM[2] += W2*fxM; aM[1] += W3*fxM; aM[0] += W4*fxM;
    aM[4] -= W1*fxM; aM[5] -= W2*fxM; aM[6] -= W3*fxM; aM[7] -= W4*fxM;
    __syncthreads();
    if (kind == 0) {
      const int iy = (r + 4)*S::YB + c, B = S::YB, iz = r*S::ZB + c + 4;
      aP[3] += (W1*(sFyP[iy] - sFyP[iy - B]) + W2*(sFyP[iy + B] - sFyP[iy - 2*B]) + W3*(sFyP[iy + 2*B] - sFyP[iy - 3*B]) + W4*(sFyP[iy + 3*B] - sFyP[iy - 4*B]))*ihy
             + (W1*(sFzP[iz] - sFzP[iz - 1]) + W2*(sFzP[iz + 1] - sFzP[iz - 2]) + W3*(sFzP[iz + 2] - sFzP[iz - 3]) + W4*(sFzP[iz + 3] - sFzP[iz - 4]))*ihz;
      aM[3] += (W1*(sFyM[iy] - sFyM[iy - B]) + W2*(sFyM[iy + B] - sFyM[iy - 2*B]) + W3*(sFyM[iy + 2*B] - sFyM[iy - 3*B]) + W4*(sFyM[iy + 3*B] - sFyM[iy - 4*B]))*ihy
             + (W1*(sFzM[iz] - sFzM[iz - 1]) + W2*(sFzM[iz + 1] - sFzM[iz - 2]) + W3*(sFzM[iz + 2] - sFzM[iz - 3]) + W4*(sFzM[iz + 3] - sFzM[iz - 4]))*ihz;
      const int xc = p - 3;
      if (col && xc >= xs && xc <= xe) {
        const long o = o0 + (long)xc*d.sx;
        const float bv = m.bv[o], vb = m.vb[o];
        Pn[o] = (dt2*aP[0] + (2*qP[0] - Pp[o])*bv)*vb;
        Mn[o] = (dt2*aM[0] + (2*qM[0] - Mp[o])*bv)*vb;
      }
    }
    #pragma unroll
    for (int k = 0; k < 7; ++k) { aP[k] = aP[k + 1]; aM[k] = aM[k + 1]; }
    aP[7] = 0; aM[7] = 0;
  }
}

// ---------------------------------------------------------------- fused, tuned
// As fused_plain, plus: coefficients precomputed per point (kp = b(1+2eps), b, sa = b(2eps+f eta^2),
// sc = b f eta sqrt(1-eta^2), se = b f eta^2, n0..n2), 32-bit offsets, the plane loop unrolled
// by 8 so that the queues rotate by renaming, the next plane's global values loaded an
// iteration ahead.
struct Coefficients { const float *kp, *b, *sa, *sc, *se, *n0, *n1, *n2, *vb, *bv; };

template <int TY>
__global__ void __launch_bounds__(Shape<TY>::NT, 1)
fused_tuned(Dims d, const float *__restrict__ P, const float *__restrict__ Pp, float *__restrict__ Pn,
       const float *__restrict__ M, const float *__restrict__ Mp, float *__restrict__ Mn, Coefficients m,
       float ihx, float ihy, float ihz, float dt2, int planes)
{
  using S = Shape<TY>;
  __shared__ float sP[S::PL], sM[S::PL], sFyP[S::YL], sFyM[S::YL], sFzP[S::ZL], sFzM[S::ZL];
  const int tid = threadIdx.x + 32*threadIdx.y;
  int r, c, kind;
  if ((int)threadIdx.y < S::RY) {
    r = (int)threadIdx.y - 4; c = threadIdx.x; kind = (r >= 0 && r < TY) ? 0 : 1;
  } else {
    const int e = tid - 32*S::RY;
    r = e/7; const int k = e%7; c = k < 4 ? k - 4 : S::TZ + k - 4;
    kind = e < TY*7 ? 2 : 3;
    if (kind == 3) { r = 0; c = 0; }
  }
  const int y0 = blockIdx.y*TY, z0 = blockIdx.x*S::TZ;
  const int y = y0 + r, z = z0 + c;
  const bool col = kind != 3 && y >= 0 && y < d.ny && z >= 0 && z < d.nz;
  const int xs = blockIdx.z*planes, xe = min(xs + planes, d.nx) - 1;
  const int sx = (int)d.sx;
  const int o0 = (int)at(d, 0, y, z);
  const int sp = (r + 7)*S::PB + (c + 7);
  int bsp[S::NB], bo[S::NB];
  #pragma unroll
  for (int k = 0; k < S::NB; ++k) {
    const int e = tid + k*S::NT;
    const int rr = e/S::PB - 7, cc = e%S::PB - 7;
    const bool tilec = cc >= 0 && cc < S::TZ, tiler = rr >= 0 && rr < TY;
    const bool flux = (tilec && rr >= -4 && rr <= TY + 2) || (tiler && cc >= -4 && cc <= S::TZ + 2);
    const bool need = (tilec && rr >= -7 && rr <= TY + 6) || (rr >= -4 && rr <= TY + 2 && cc >= -3 && cc <= S::TZ + 3)
                   || (tiler && cc >= -7 && cc <= S::TZ + 6) || (rr >= -3 && rr <= TY + 3 && cc >= -4 && cc <= S::TZ + 2);
    const int gy = y0 + rr, gz = z0 + cc;
    const bool in = e < S::PL && need && !flux && gy >= 0 && gy < d.ny && gz >= 0 && gz < d.nz;
    bsp[k] = e < S::PL && need && !flux ? e : -1; bo[k] = in ? (int)at(d, 0, gy, gz) : -1;
  }
  float qP[8], qM[8], aP[8], aM[8];
  const int pfirst = xs - 4;
  // before plane p = pfirst + j: q[(j + k) % 8] = u[p - 3 + k] for k < 7; slot (j + 7) % 8 is
  // filled with u[p + 4] (loaded the iteration before)
  #pragma unroll
  for (int k = 0; k < 8; ++k) {
    const int x = pfirst - 3 + k;
    qP[k] = col && k < 7 ? P[o0 + x*sx] : 0.f;
    qM[k] = col && k < 7 ? M[o0 + x*sx] : 0.f;
    aP[k] = 0.f; aM[k] = 0.f;
  }
  float nP = 0, nM = 0;   // u[p + 5]
  float bP[S::NB], bM[S::NB];
  #pragma unroll
  for (int k = 0; k < S::NB; ++k) {
    bP[k] = bo[k] >= 0 ? P[bo[k] + pfirst*sx] : 0.f;
    bM[k] = bo[k] >= 0 ? M[bo[k] + pfirst*sx] : 0.f;
  }
  float kp = 0, bb = 0, sa = 0, sc = 0, se = 0, n0 = 0, n1 = 0, n2 = 0;
  float pp = 0, pm = 0, bv = 0, vb = 0;
  const bool tile = kind == 0 && col;
  auto medium = [&](int x) {
    if (col && x >= 0 && x < d.nx) {
      const int o = o0 + x*sx;
      kp = m.kp[o]; bb = m.b[o]; sa = m.sa[o]; sc = m.sc[o]; se = m.se[o];
      n0 = m.n0[o]; n1 = m.n1[o]; n2 = m.n2[o];
    } else { kp = bb = sa = sc = se = n0 = n1 = n2 = 0; }
  };
  auto consumer = [&](int xc) {
    if (tile && xc >= xs && xc <= xe) {
      const int o = o0 + xc*sx; pp = Pp[o]; pm = Mp[o]; bv = m.bv[o]; vb = m.vb[o];
    }
  };
  if (col) { nP = P[o0 + (pfirst + 4)*sx]; nM = M[o0 + (pfirst + 4)*sx]; }
  for (int p0 = pfirst; p0 <= xe + 3; p0 += 8) {
    #pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int p = p0 + j;
      if (p > xe + 3) break;
      // the registers of this plane, then the next plane's loads
      medium(p); consumer(p - 3);
      const float ckp = kp, cbb = bb, csa = sa, csc = sc, cse = se, cn0 = n0, cn1 = n1, cn2 = n2;
      const float cpp = pp, cpm = pm, cbv = bv, cvb = vb;
      float cbP[S::NB], cbM[S::NB];
      #pragma unroll
      for (int k = 0; k < S::NB; ++k) { cbP[k] = bP[k]; cbM[k] = bM[k]; }
      qP[(j + 7) % 8] = nP; qM[(j + 7) % 8] = nM;
      if (col && p + 5 < d.nx + H) { nP = P[o0 + (p + 5)*sx]; nM = M[o0 + (p + 5)*sx]; }
      else { nP = 0; nM = 0; }
      #pragma unroll
      for (int k = 0; k < S::NB; ++k) {
        bP[k] = bo[k] >= 0 && p + 1 < d.nx + H ? P[bo[k] + (p + 1)*sx] : 0.f;
        bM[k] = bo[k] >= 0 && p + 1 < d.nx + H ? M[bo[k] + (p + 1)*sx] : 0.f;
      }
#define QP(k) qP[(j + (k)) % 8]
#define QM(k) qM[(j + (k)) % 8]
#define AP(k) aP[(j + (k)) % 8]
#define AM(k) aM[(j + (k)) % 8]
      if (kind != 3) { sP[sp] = QP(3); sM[sp] = QM(3); }
      #pragma unroll
      for (int k = 0; k < S::NB; ++k)
        if (bsp[k] >= 0) { sP[bsp[k]] = cbP[k]; sM[bsp[k]] = cbM[k]; }
      __syncthreads();
      const bool pin = p >= 0 && p < d.nx;
      float fxP = 0, fxM = 0;
      {
        float fyP = 0, fyM = 0, fzP = 0, fzM = 0;
        if (col && pin) {
          const float gx = (W1*(QP(4) - QP(3)) + W2*(QP(5) - QP(2)) + W3*(QP(6) - QP(1)) + W4*(QP(7) - QP(0)))*ihx;
          const float hx = (W1*(QM(4) - QM(3)) + W2*(QM(5) - QM(2)) + W3*(QM(6) - QM(1)) + W4*(QM(7) - QM(0)))*ihx;
          const int B = S::PB;
          const float gy = (W1*(sP[sp + B] - sP[sp]) + W2*(sP[sp + 2*B] - sP[sp - B]) + W3*(sP[sp + 3*B] - sP[sp - 2*B]) + W4*(sP[sp + 4*B] - sP[sp - 3*B]))*ihy;
          const float hy = (W1*(sM[sp + B] - sM[sp]) + W2*(sM[sp + 2*B] - sM[sp - B]) + W3*(sM[sp + 3*B] - sM[sp - 2*B]) + W4*(sM[sp + 4*B] - sM[sp - 3*B]))*ihy;
          const float gz = (W1*(sP[sp + 1] - sP[sp]) + W2*(sP[sp + 2] - sP[sp - 1]) + W3*(sP[sp + 3] - sP[sp - 2]) + W4*(sP[sp + 4] - sP[sp - 3]))*ihz;
          const float hz = (W1*(sM[sp + 1] - sM[sp]) + W2*(sM[sp + 2] - sM[sp - 1]) + W3*(sM[sp + 3] - sM[sp - 2]) + W4*(sM[sp + 4] - sM[sp - 3]))*ihz;
          const float ngp = cn0*gx + cn1*gy + cn2*gz, ngm = cn0*hx + cn1*hy + cn2*hz;
          const float sp_ = csc*ngm - csa*ngp, sm_ = cse*ngm + csc*ngp;
          const float km = (1 - F)*cbb;
          fxP = ckp*gx + cn0*sp_; fxM = km*hx + cn0*sm_;
          fyP = ckp*gy + cn1*sp_; fyM = km*hy + cn1*sm_;
          fzP = ckp*gz + cn2*sp_; fzM = km*hz + cn2*sm_;
        }
        if (kind <= 1) { sFyP[(r + 4)*S::YB + c] = fyP; sFyM[(r + 4)*S::YB + c] = fyM; }
        if (kind == 0 || kind == 2) { sFzP[r*S::ZB + c + 4] = fzP; sFzM[r*S::ZB + c + 4] = fzM; }
      }
      fxP *= ihx; fxM *= ihx;
      AP(3) += W1*fxP; AP(2) += W2*fxP; AP(1) += W3*fxP; AP(0) += W4*fxP;
      AP(4) -= W1*fxP; AP(5) -= W2*fxP; AP(6) -= W3*fxP; AP(7) -= W4*fxP;
      AM(3) += W1*fxM; AM(2) += W2*fxM; AM(1) += W3*fxM; AM(0) += W4*fxM;
      AM(4) -= W1*fxM; AM(5) -= W2*fxM; AM(6) -= W3*fxM; AM(7) -= W4*fxM;
      __syncthreads();
      if (kind == 0) {
        const int iy = (r + 4)*S::YB + c, B = S::YB, iz = r*S::ZB + c + 4;
        AP(3) += (W1*(sFyP[iy] - sFyP[iy - B]) + W2*(sFyP[iy + B] - sFyP[iy - 2*B]) + W3*(sFyP[iy + 2*B] - sFyP[iy - 3*B]) + W4*(sFyP[iy + 3*B] - sFyP[iy - 4*B]))*ihy
               + (W1*(sFzP[iz] - sFzP[iz - 1]) + W2*(sFzP[iz + 1] - sFzP[iz - 2]) + W3*(sFzP[iz + 2] - sFzP[iz - 3]) + W4*(sFzP[iz + 3] - sFzP[iz - 4]))*ihz;
        AM(3) += (W1*(sFyM[iy] - sFyM[iy - B]) + W2*(sFyM[iy + B] - sFyM[iy - 2*B]) + W3*(sFyM[iy + 2*B] - sFyM[iy - 3*B]) + W4*(sFyM[iy + 3*B] - sFyM[iy - 4*B]))*ihy
               + (W1*(sFzM[iz] - sFzM[iz - 1]) + W2*(sFzM[iz + 1] - sFzM[iz - 2]) + W3*(sFzM[iz + 2] - sFzM[iz - 3]) + W4*(sFzM[iz + 3] - sFzM[iz - 4]))*ihz;
        const int xc = p - 3;
        if (col && xc >= xs && xc <= xe) {
          const int o = o0 + xc*sx;
          Pn[o] = (dt2*AP(0) + (2*QP(0) - cpp)*cbv)*cvb;
          Mn[o] = (dt2*AM(0) + (2*QM(0) - cpm)*cbv)*cvb;
        }
      }
      AP(0) = 0; AM(0) = 0;   // becomes plane p + 5's (slot 7 of the next plane)
#undef QP
#undef QM
#undef AP
#undef AM
    }
  }
}

// ---------------------------------------------------------------- fused, rings (issue 47)
// Each thread owns a pair of z-points (float2): global accesses are 64-bit, a warp is two rows
// of 16 threads. The block's warps have three roles, each with a plane loop of its own (their
// registers do not add up): the tile (16 rows: full fluxes, then the divergence and the
// update), the y-halo (rows -4..-1 and 16..19, two rows a thread: their y-derivatives share
// loads; y-fluxes only) and the z-halo (pairs (-4,-3) (-2,-1) (32,33) (34,35) of the tile rows;
// z-fluxes only): 12 warps, three a scheduler (a scheduler holds 16K registers). No register
// queues, so the plane loop is not unrolled and the code stays small (the same roles with
// register queues unrolled by 8 made ~140 KB of SASS and lost a third of the warp cycles to
// instruction fetch: commit 79c8f09). The P/M planes live in a ring of 9 shared slots (x-taps
// are shared loads of the thread's own column; plane p+4 is stored while p-4..p+3 are read),
// the y/z-fluxes in a ring of 4 (plane p-1 written while p-4 is read), the tile's x-fluxes in
// a thread-private ring of 8 that the x-divergence gathers; P and M (and their fluxes) are
// interleaved a pair at a time, (P0, P1, M0, M1), so one 128-bit shared load serves both
// fields. A ring's taps wrap at most once, so each tap's address is one of two bases plus an
// immediate. One barrier a plane: iteration p runs the producer at plane p-1, the divergence
// and update at p-4, stores plane p+4. Every global load is issued right after its register's
// last use, so it flies for an iteration without a second register set. The medium is read as
// coefficient products packed per point: (kp, km, sa, sc), (se, n0, n1, n2) and (dt^2 vb,
// bv vb), zero outside the grid, so fluxes vanish there without a test; rows and columns
// beyond the arrays' padding are clamped to it once, so no load is tested.
struct Pack { const float4 *a, *b; const float2 *c; };

__device__ __forceinline__ float dfw(float m3, float m2, float m1, float c0, float p1, float p2,
                                     float p3, float p4)
{ return W1*(p1 - c0) + W2*(p2 - m1) + W3*(p3 - m2) + W4*(p4 - m3); }
__device__ __forceinline__ float dbw(float m4, float m3, float m2, float m1, float c0, float p1,
                                     float p2, float p3)
{ return W1*(c0 - m1) + W2*(p1 - m2) + W3*(p2 - m3) + W4*(p3 - m4); }
__device__ __forceinline__ float el(const float2 &v, int e) { return e ? v.y : v.x; }
__device__ __forceinline__ void st2(float *s, int i, float2 v) { *reinterpret_cast<float2 *>(s + i) = v; }
__device__ __forceinline__ float2 gl2(const float *g, int i) { return *reinterpret_cast<const float2 *>(g + i); }

// the x-derivative (forward) at plane p-1 of element e from the taps q[k] = plane p-4+k
__device__ __forceinline__ float dx(const float2 (&q)[8], int e)
{
  return dfw(el(q[0], e), el(q[1], e), el(q[2], e), el(q[3], e), el(q[4], e), el(q[5], e),
             el(q[6], e), el(q[7], e));
}

struct Args {
  Dims d; const float *P, *Pp, *M, *Mp; float *Pn, *Mn; Pack pk;
  float ihx, ihy, ihz; int y0, z0, xs, xe, sx;
  const float *bsrc; int bo, bsp;
};

__device__ __forceinline__ int column_of(const Args &a, int rr, int cc)
{
  const int gy = min(max(a.y0 + rr, -H), a.d.ny + H - 1);
  const int gz = min(max(a.z0 + cc, -HZ), (int)a.d.sy - HZ - 2);
  return (int)at(a.d, 0, gy, gz);
}

template <int TY>
struct Rings {
  static constexpr int TZ = 32, NTILE = 16*TY, NYH = 16*4, NZH = 4*TY;
  static constexpr int NT = NTILE + NYH + NZH;
  static constexpr int REGS = 16384/((NT/32 + 3)/4*32)/8*8 > 255 ? 255 : 16384/((NT/32 + 3)/4*32)/8*8;
  // a P/M plane: rows -7..TY+7 (TY+7 only for the y-taps of the halo's unused row TY+3, which
  // would otherwise read into the next slot), 24 pairs (cols -8..39)
  static constexpr int PB = 96, SL = PB*(TY + 15);
  static constexpr int YB = 64, YL = YB*(TY + 8);      // y-fluxes: rows -4..TY+3, 16 pairs
  static constexpr int ZB = 80, ZL = ZB*TY;            // z-fluxes: rows 0..TY-1, 20 pairs (cols -4..35)
  static constexpr int NBAND = 16*6 + 4*8 + 4*TY;
  static constexpr int RING = 0, FL = YL + ZL, FLUX = RING + 9*SL, XR = FLUX + 4*FL;
  static constexpr int FLOATS = XR + 8*4*NTILE, SHARED = FLOATS*4;
};

// a 128-bit shared load even when some lanes go unused (otherwise the compiler splits it into
// 32-bit loads at a 16-byte stride: four times the wavefronts)
__device__ __forceinline__ float4 ld4(const float *s, int i)
{
  float4 v;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"((unsigned)__cvta_generic_to_shared(s + i)));
  return v;
}
__device__ __forceinline__ void st4(float *s, int i, float4 v) { *reinterpret_cast<float4 *>(s + i) = v; }
__device__ __forceinline__ float2 lo(float4 v) { return make_float2(v.x, v.y); }
__device__ __forceinline__ float2 hi(float4 v) { return make_float2(v.z, v.w); }

template <int TY, int KIND>
__device__ __forceinline__ void rings_loop(const Args &a, float *sh, int r, int c, int tid)
{
  using S = Rings<TY>;
  constexpr int NR = KIND == 1 ? 2 : 1;
  const int sx = a.sx, ps = a.xs - 4, pe = a.xe + 4;
  int o0[NR], sp[NR];
  #pragma unroll
  for (int i = 0; i < NR; ++i) { o0[i] = column_of(a, r + i, c); sp[i] = (r + i + 7)*S::PB + 2*(c + 8); }
  const bool store = KIND == 0 && a.y0 + r < a.d.ny && a.z0 + c < a.d.nz, store1 = a.z0 + c + 1 < a.d.nz;
  for (int k = 0; k < 8; ++k) {
    float *slot = sh + S::RING + ((5 + k) % 9)*S::SL;
    const int x = ps - 4 + k;
    #pragma unroll
    for (int i = 0; i < NR; ++i) {
      const float2 u = gl2(a.P, o0[i] + x*sx), v = gl2(a.M, o0[i] + x*sx);
      st4(slot, sp[i], make_float4(u.x, u.y, v.x, v.y));
    }
    if (a.bsp >= 0) st2(slot, a.bsp, gl2(a.bsrc, a.bo + x*sx));
  }
  float2 nP[NR], nM[NR], band = make_float2(0.f, 0.f);
  float4 ma[NR][2], mb[NR][2], mc = make_float4(0.f, 0.f, 0.f, 0.f);
  float2 pp = make_float2(0.f, 0.f), pm = pp;
  #pragma unroll
  for (int i = 0; i < NR; ++i) {
    nP[i] = gl2(a.P, o0[i] + (ps + 4)*sx); nM[i] = gl2(a.M, o0[i] + (ps + 4)*sx);
    const int of = o0[i] + (ps - 1)*sx;
    ma[i][0] = a.pk.a[of]; ma[i][1] = a.pk.a[of + 1]; mb[i][0] = a.pk.b[of]; mb[i][1] = a.pk.b[of + 1];
  }
  if (a.bsp >= 0) band = gl2(a.bsrc, a.bo + (ps + 4)*sx);
  if (KIND == 0) {
    const int oc = o0[0] + (ps - 4)*sx;
    pp = gl2(a.Pp, oc); pm = gl2(a.Mp, oc); mc = *reinterpret_cast<const float4 *>(a.pk.c + oc);
  }
  float4 *xr = reinterpret_cast<float4 *>(sh + S::XR) + tid;   // this thread's x-flux ring
  __syncthreads();
  #pragma unroll 1
  for (int p = ps, t = 0; p <= pe; ++p, ++t) {
    const int tb = (t + 5) % 9, w = 9 - tb;
    const float *R1 = sh + S::RING + tb*S::SL, *R2 = R1 - 9*S::SL;
    const float *Rc = sh + S::RING + ((t + 8) % 9)*S::SL;
    float *Fw = sh + S::FLUX + ((t + 3) & 3)*S::FL;          // fluxes of plane p-1
    float4 fx;   // the tile's x-fluxes (P pair, M pair)
    // (1) the producer at plane p-1
    #pragma unroll
    for (int i = 0; i < NR; ++i) {
      float2 qP[8], qM[8];
      #pragma unroll
      for (int k = 0; k < 8; ++k) {
        const float4 v = ld4((k < w ? R1 : R2) + k*S::SL, sp[i]);
        qP[k] = lo(v); qM[k] = hi(v);
      }
      float g[3][2], h[3][2];
      #pragma unroll
      for (int e = 0; e < 2; ++e) { g[0][e] = dx(qP, e)*a.ihx; h[0][e] = dx(qM, e)*a.ihx; }
      {
        float2 yP[8], yM[8];
        #pragma unroll
        for (int k = 0; k < 8; ++k) {
          if (k == 3) { yP[k] = qP[3]; yM[k] = qM[3]; }
          else { const float4 v = ld4(Rc, sp[i] + (k - 3)*S::PB); yP[k] = lo(v); yM[k] = hi(v); }
        }
        #pragma unroll
        for (int e = 0; e < 2; ++e) {
          g[1][e] = dfw(el(yP[0], e), el(yP[1], e), el(yP[2], e), el(yP[3], e), el(yP[4], e), el(yP[5], e), el(yP[6], e), el(yP[7], e))*a.ihy;
          h[1][e] = dfw(el(yM[0], e), el(yM[1], e), el(yM[2], e), el(yM[3], e), el(yM[4], e), el(yM[5], e), el(yM[6], e), el(yM[7], e))*a.ihy;
        }
      }
      {
        const float4 l2 = ld4(Rc, sp[i] - 8), l1 = ld4(Rc, sp[i] - 4), r1 = ld4(Rc, sp[i] + 4), r2 = ld4(Rc, sp[i] + 8);
        const float2 oP = qP[3], oM = qM[3];
        g[2][0] = dfw(l2.y, l1.x, l1.y, oP.x, oP.y, r1.x, r1.y, r2.x)*a.ihz;
        g[2][1] = dfw(l1.x, l1.y, oP.x, oP.y, r1.x, r1.y, r2.x, r2.y)*a.ihz;
        h[2][0] = dfw(l2.w, l1.z, l1.w, oM.x, oM.y, r1.z, r1.w, r2.z)*a.ihz;
        h[2][1] = dfw(l1.z, l1.w, oM.x, oM.y, r1.z, r1.w, r2.z, r2.w)*a.ihz;
      }
      float f[2][3][2];
      #pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float4 A = ma[i][e], B = mb[i][e];
        const float kp = A.x, km = A.y, sa = A.z, sc = A.w, se = B.x, n[3] = {B.y, B.z, B.w};
        const float ngp = n[0]*g[0][e] + n[1]*g[1][e] + n[2]*g[2][e];
        const float ngm = n[0]*h[0][e] + n[1]*h[1][e] + n[2]*h[2][e];
        const float s_p = sc*ngm - sa*ngp, s_m = se*ngm + sc*ngp;
        #pragma unroll
        for (int ax = 0; ax < 3; ++ax)
          if (KIND == 0 || (KIND == 1 && ax == 1) || (KIND == 2 && ax == 2)) {
            f[0][ax][e] = kp*g[ax][e] + n[ax]*s_p; f[1][ax][e] = km*h[ax][e] + n[ax]*s_m;
          }
      }
      {   // the medium of the next iteration (plane p) into the registers just freed
        const int of = o0[i] + p*sx;
        ma[i][0] = a.pk.a[of]; ma[i][1] = a.pk.a[of + 1]; mb[i][0] = a.pk.b[of]; mb[i][1] = a.pk.b[of + 1];
      }
      if (KIND == 0 || KIND == 1)
        st4(Fw, (r + i + 4)*S::YB + 2*c, make_float4(f[0][1][0], f[0][1][1], f[1][1][0], f[1][1][1]));
      if (KIND == 0 || KIND == 2)
        st4(Fw, S::YL + r*S::ZB + 2*(c + 4), make_float4(f[0][2][0], f[0][2][1], f[1][2][0], f[1][2][1]));
      if (KIND == 0)
        fx = make_float4(f[0][0][0]*a.ihx, f[0][0][1]*a.ihx, f[1][0][0]*a.ihx, f[1][0][1]*a.ihx);
    }
    // (2) the tile: divergence and update of plane p-4
    if (KIND == 0) {
      const int tx = t & 7, wx = 8 - tx;     // x-flux taps k (planes p-8+k): slot tx + k
      float4 *X1 = xr + tx*S::NTILE, *X2 = X1 - 8*S::NTILE;
      float4 v[8];
      #pragma unroll
      for (int k = 0; k < 7; ++k) v[k] = ((k < wx ? X1 : X2) + k*S::NTILE)[0];
      v[7] = fx;
      ((7 < wx ? X1 : X2) + 7*S::NTILE)[0] = fx;     // plane p-1's slot
      const float *Fr = sh + S::FLUX + (t & 3)*S::FL;    // fluxes of plane p-4
      const int jy = (r + 4)*S::YB + 2*c, jz = S::YL + r*S::ZB + 2*(c + 4);
      float4 y[8];
      #pragma unroll
      for (int k = 0; k < 8; ++k) y[k] = ld4(Fr, jy + (k - 4)*S::YB);
      const float4 ul2 = ld4(Fr, jz - 8), ul1 = ld4(Fr, jz - 4), u0 = ld4(Fr, jz), ur1 = ld4(Fr, jz + 4), ur2 = ld4(Fr, jz + 8);
      float d[2][2];   // [field][element]
      #pragma unroll
      for (int fld = 0; fld < 2; ++fld) {
        #pragma unroll
        for (int e = 0; e < 2; ++e) {
          auto C = [&](const float4 &q) { return fld ? (e ? q.w : q.z) : (e ? q.y : q.x); };
          const float xd = dbw(C(v[0]), C(v[1]), C(v[2]), C(v[3]), C(v[4]), C(v[5]), C(v[6]), C(v[7]));
          const float yd = dbw(C(y[0]), C(y[1]), C(y[2]), C(y[3]), C(y[4]), C(y[5]), C(y[6]), C(y[7]));
          const float a0 = fld ? ul2.z : ul2.x, a1 = fld ? ul2.w : ul2.y, b0 = fld ? ul1.z : ul1.x, b1 = fld ? ul1.w : ul1.y;
          const float c0 = fld ? u0.z : u0.x, c1 = fld ? u0.w : u0.y, d0 = fld ? ur1.z : ur1.x, d1 = fld ? ur1.w : ur1.y;
          const float e0 = fld ? ur2.z : ur2.x;
          const float zd = e == 0 ? dbw(a0, a1, b0, b1, c0, c1, d0, d1) : dbw(a1, b0, b1, c0, c1, d0, d1, e0);
          d[fld][e] = xd + yd*a.ihy + zd*a.ihz;
        }
      }
      const float4 cm = ld4(R1, sp[0]);   // plane p-4 (x-tap 0)
      const float2 outP = make_float2(mc.x*d[0][0] + mc.y*(2.f*cm.x - pp.x), mc.z*d[0][1] + mc.w*(2.f*cm.y - pp.y));
      const float2 outM = make_float2(mc.x*d[1][0] + mc.y*(2.f*cm.z - pm.x), mc.z*d[1][1] + mc.w*(2.f*cm.w - pm.y));
      const int oc = o0[0] + (p - 4)*sx;
      if (store && p - 4 >= a.xs) {
        if (store1) { *reinterpret_cast<float2 *>(a.Pn + oc) = outP; *reinterpret_cast<float2 *>(a.Mn + oc) = outM; }
        else { a.Pn[oc] = outP.x; a.Mn[oc] = outM.x; }
      }
      const int on = oc + sx;   // the next iteration's consumer
      pp = gl2(a.Pp, on); pm = gl2(a.Mp, on); mc = *reinterpret_cast<const float4 *>(a.pk.c + on);
    }
    {
      float *Ws = sh + S::RING + ((t + 4) % 9)*S::SL;
      #pragma unroll
      for (int i = 0; i < NR; ++i) {
        st4(Ws, sp[i], make_float4(nP[i].x, nP[i].y, nM[i].x, nM[i].y));
        if (p + 5 <= a.xe + 7) { nP[i] = gl2(a.P, o0[i] + (p + 5)*sx); nM[i] = gl2(a.M, o0[i] + (p + 5)*sx); }
      }
      if (a.bsp >= 0) {
        st2(Ws, a.bsp, band);
        if (p + 5 <= a.xe + 7) band = gl2(a.bsrc, a.bo + (p + 5)*sx);
      }
    }
    __syncthreads();
  }
}

template <int TY>
__global__ void __launch_bounds__(Rings<TY>::NT) __maxnreg__(Rings<TY>::REGS)
fused_rings(Dims d, const float *__restrict__ P, const float *__restrict__ Pp, float *__restrict__ Pn,
         const float *__restrict__ M, const float *__restrict__ Mp, float *__restrict__ Mn,
         Pack pk, float ihx, float ihy, float ihz, int planes)
{
  using S = Rings<TY>;
  extern __shared__ float sh[];
  const int tid = threadIdx.x;
  for (int i = tid; i < S::FLOATS; i += S::NT) sh[i] = 0.f;
  Args a;
  a.d = d; a.P = P; a.Pp = Pp; a.M = M; a.Mp = Mp; a.Pn = Pn; a.Mn = Mn; a.pk = pk;
  a.ihx = ihx; a.ihy = ihy; a.ihz = ihz; a.y0 = blockIdx.y*TY; a.z0 = blockIdx.x*S::TZ;
  a.xs = blockIdx.z*planes; a.xe = min(a.xs + planes, d.nx) - 1; a.sx = (int)d.sx;
  a.bsp = -1; a.bo = 0; a.bsrc = P;
  if (tid < 2*S::NBAND) {
    const int e = tid < S::NBAND ? tid : tid - S::NBAND;
    int rr, cc;
    if (e < 96) { const int h = e/16; rr = h < 3 ? h - 7 : TY + h + 1; cc = 2*(e%16); }
    else if (e < 128) { const int h = (e - 96)/4, k = (e - 96)%4; rr = h < 4 ? h - 4 : TY + h - 4; cc = k < 2 ? 2*k - 4 : 28 + 2*k; }
    else { const int h = (e - 128)/4, k = (e - 128)%4; rr = h; cc = k < 2 ? 2*k - 8 : 32 + 2*k; }
    a.bsp = (rr + 7)*S::PB + 2*(cc + 8) + (tid < S::NBAND ? 0 : 2); a.bo = column_of(a, rr, cc);
    a.bsrc = tid < S::NBAND ? P : M;
  }
  __syncthreads();
  if (tid < S::NTILE) rings_loop<TY, 0>(a, sh, tid/16, 2*(tid%16), tid);
  else if (tid < S::NTILE + S::NYH) {
    const int e = tid - S::NTILE, h = e/16;
    rings_loop<TY, 1>(a, sh, h < 2 ? 2*h - 4 : TY + 2*(h - 2), 2*(e%16), tid);
  } else {
    const int e = tid - S::NTILE - S::NYH, k = e%4;
    rings_loop<TY, 2>(a, sh, e/4, k < 2 ? 2*k - 4 : 28 + 2*k, tid);
  }
}

template <int TY>
static void launch_rings(Dims d, float *Pc, float *Pp, float *Pn, float *Mc, float *Mp, float *Mn,
                      Pack m, float ih, int p)
{
  using S = Rings<TY>;
  static bool once = false;
  if (!once) { CK(cudaFuncSetAttribute(fused_rings<TY>, cudaFuncAttributeMaxDynamicSharedMemorySize, S::SHARED)); once = true; }
  dim3 g((d.nz + 31)/32, (d.ny + TY - 1)/TY, (d.nx + p - 1)/p);
  fused_rings<TY><<<g, S::NT, S::SHARED>>>(d, Pc, Pp, Pn, Mc, Mp, Mn, m, ih, ih, ih, p);
}

// ---------------------------------------------------------------- driver
template <int TY>
static void launch_tuned(Dims d, float *Pc, float *Pp, float *Pn, float *Mc, float *Mp, float *Mn,
                    Coefficients m, float ih, float dt2, int p)
{
  using S = Shape<TY>;
  dim3 g((d.nz + 31)/32, (d.ny + TY - 1)/TY, (d.nx + p - 1)/p);
  fused_tuned<TY><<<g, dim3(32, S::NT/32)>>>(d, Pc, Pp, Pn, Mc, Mp, Mn, m, ih, ih, ih, dt2, p);
}

template <int TY>
static void launch_plain(Dims d, float *Pc, float *Pp, float *Pn, float *Mc, float *Mp, float *Mn,
                   Med m, float ih, float dt2, int p)
{
  using S = Shape<TY>;
  dim3 g((d.nz + 31)/32, (d.ny + TY - 1)/TY, (d.nx + p - 1)/p);
  fused_plain<TY><<<g, dim3(32, S::NT/32)>>>(d, Pc, Pp, Pn, Mc, Mp, Mn, m, ih, ih, ih, dt2, p);
}

int main(int argc, char **argv)
{
  if (argc < 5) { printf("usage: sa_tti_handwritten nx ny nz nt [mode] [planes] [tile rows]\n"); return 1; }
  Dims d; d.nx = atoi(argv[1]); d.ny = atoi(argv[2]); d.nz = atoi(argv[3]);
  const int nt = atoi(argv[4]), check = argc > 5 ? atoi(argv[5]) : 0;
  const int planes = argc > 6 ? atoi(argv[6]) : 0, ty = argc > 7 ? atoi(argv[7]) : 16;
  const int nzp = (d.nz + 2*HZ + 31)/32*32;
  d.sy = nzp; d.sx = (long)(d.ny + 2*H)*nzp;
  const long n = (long)(d.nx + 2*H)*d.sx;
  const float s1 = 2*(1225.f/1024 + 245.f/3072 + 49.f/5120 + 5.f/7168), h = 10.f;
  const float dt = 0.8f*2.f/(1.5f*sqrtf(1.2f)*sqrtf(3.f)*s1/h);
  std::vector<float> hP(n, 0.f), hmed(n, 0.f);
  float *buf[29];
  for (int i = 0; i < 29; ++i) { CK(cudaMalloc(&buf[i], n*sizeof(float))); CK(cudaMemset(buf[i], 0, n*sizeof(float))); }
  auto fill = [&](float *dst, float v, float amp) {
    for (int x = 0; x < d.nx; ++x) for (int y = 0; y < d.ny; ++y) for (int z = 0; z < d.nz; ++z)
      hmed[at(d, x, y, z)] = v*(1 + amp*sinf(0.05f*x + 0.07f*y + 0.11f*z));
    CK(cudaMemcpy(dst, hmed.data(), n*sizeof(float), cudaMemcpyHostToDevice)); };
  Med m; const float th = M_PI/6, ph = M_PI/4, V = 1.5f;
  fill(buf[6], 0.1f, 0.1f); fill(buf[7], 0.05f, 0.1f); fill(buf[8], 1.f, 0.1f);
  fill(buf[9], cosf(ph), 0.01f); fill(buf[10], sinf(ph), 0.01f); fill(buf[11], sinf(th), 0.01f);
  fill(buf[12], cosf(th), 0.01f); fill(buf[13], V*V, 0.f); fill(buf[14], 1.f/(V*V), 0.f);
  m.eps = buf[6]; m.dlt = buf[7]; m.b = buf[8]; m.cp = buf[9]; m.sp = buf[10]; m.st = buf[11];
  m.ct = buf[12]; m.vb = buf[13]; m.bv = buf[14];
  Coefficients m2; Pack pk;
  {
    // the coefficients of fused_tuned from the same medium, on the host
    std::vector<std::vector<float>> hm(9, std::vector<float>(n)), out(8, std::vector<float>(n, 0.f));
    for (int i = 0; i < 7; ++i) CK(cudaMemcpy(hm[i].data(), buf[6 + i], n*sizeof(float), cudaMemcpyDeviceToHost));
    for (long i = 0; i < n; ++i) {
      const float eps = hm[0][i], dlt = hm[1][i], b = hm[2][i];
      if (b == 0) continue;
      const float eta2 = 2.f*(eps - dlt)/(F + 2.f*eps);
      out[0][i] = b*(1 + 2*eps); out[1][i] = b; out[2][i] = b*(2.f*eps + F*eta2);
      out[3][i] = b*F*sqrtf(eta2)*sqrtf(1.f - eta2); out[4][i] = b*F*eta2;
      out[5][i] = hm[5][i]*hm[3][i]; out[6][i] = hm[5][i]*hm[4][i]; out[7][i] = hm[6][i];
    }
    for (int i = 0; i < 8; ++i) CK(cudaMemcpy(buf[21 + i], out[i].data(), n*sizeof(float), cudaMemcpyHostToDevice));
    m2.kp = buf[21]; m2.b = buf[22]; m2.sa = buf[23]; m2.sc = buf[24]; m2.se = buf[25];
    m2.n0 = buf[26]; m2.n1 = buf[27]; m2.n2 = buf[28]; m2.vb = buf[13]; m2.bv = buf[14];
    // the packed products of fused_rings: (kp, km, sa, sc), (se, n0, n1, n2), (dt^2 vb, bv vb)
    std::vector<float> ha(4*n, 0.f), hb(4*n, 0.f), hc(2*n, 0.f);
    for (long o = 0; o < n; ++o) {
      const long i = o;
      ha[4*i] = out[0][o]; ha[4*i + 1] = (1 - F)*out[1][o]; ha[4*i + 2] = out[2][o]; ha[4*i + 3] = out[3][o];
      hb[4*i] = out[4][o]; hb[4*i + 1] = out[5][o]; hb[4*i + 2] = out[6][o]; hb[4*i + 3] = out[7][o];
    }
    std::vector<float> hvb(n), hbv(n);
    CK(cudaMemcpy(hvb.data(), buf[13], n*sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hbv.data(), buf[14], n*sizeof(float), cudaMemcpyDeviceToHost));
    for (long i = 0; i < n; ++i) { hc[2*i] = dt*dt*hvb[i]; hc[2*i + 1] = hbv[i]*hvb[i]; }
    float4 *pa, *pb; float2 *pc;
    CK(cudaMalloc(&pa, n*sizeof(float4))); CK(cudaMalloc(&pb, n*sizeof(float4))); CK(cudaMalloc(&pc, n*sizeof(float2)));
    CK(cudaMemcpy(pa, ha.data(), n*sizeof(float4), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(pb, hb.data(), n*sizeof(float4), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(pc, hc.data(), n*sizeof(float2), cudaMemcpyHostToDevice));
    pk.a = pa; pk.b = pb; pk.c = pc;
  }
  for (int x = 0; x < d.nx; ++x) for (int y = 0; y < d.ny; ++y) for (int z = 0; z < d.nz; ++z) {
    const float rx = (x - d.nx/2)*h, ry = (y - d.ny/2)*h, rz = (z - d.nz/2)*h;
    hP[at(d, x, y, z)] = expf(-(rx*rx + ry*ry + rz*rz)/(2*40.f*40.f));
  }
  auto init = [&]() {
    for (int i = 0; i < 6; ++i) CK(cudaMemset(buf[i], 0, n*sizeof(float)));
    CK(cudaMemcpy(buf[0], hP.data(), n*sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(buf[2], hP.data(), n*sizeof(float), cudaMemcpyHostToDevice)); };
  const float ih = 1.f/h;
  // level s%3 is current, (s+2)%3 previous, (s+1)%3 next; returns the last P
  auto run = [&](int which, int steps, int pl, int tyy) {
    for (int s = 0; s < steps; ++s) {
      float *Pc = buf[s % 3], *Pp = buf[(s + 2) % 3], *Pn = buf[(s + 1) % 3];
      float *Mc = buf[3 + s % 3], *Mp = buf[3 + (s + 2) % 3], *Mn = buf[3 + (s + 1) % 3];
      if (which == 0) {
        dim3 g((d.nz + 127)/128, d.ny, d.nx);
        ref_flux<<<g, 128>>>(d, Pc, Mc, m, h, h, h, buf[15], buf[16], buf[17], buf[18], buf[19], buf[20]);
        ref_update<<<g, 128>>>(d, Pc, Pp, Pn, Mc, Mp, Mn, m, h, h, h, dt*dt, buf[15], buf[16], buf[17], buf[18], buf[19], buf[20]);
      } else if (which == 3) {
        const int p = pl > 0 ? pl : d.nx;
        launch_rings<16>(d, Pc, Pp, Pn, Mc, Mp, Mn, pk, ih, p);
      } else if (which == 2) {
        const int p = pl > 0 ? pl : d.nx;
        if (tyy == 8) launch_tuned<8>(d, Pc, Pp, Pn, Mc, Mp, Mn, m2, ih, dt*dt, p);
        else if (tyy == 16) launch_tuned<16>(d, Pc, Pp, Pn, Mc, Mp, Mn, m2, ih, dt*dt, p);
        else launch_tuned<12>(d, Pc, Pp, Pn, Mc, Mp, Mn, m2, ih, dt*dt, p);
      } else {
        const int p = pl > 0 ? pl : d.nx;
        if (tyy == 8) launch_plain<8>(d, Pc, Pp, Pn, Mc, Mp, Mn, m, ih, dt*dt, p);
        else if (tyy == 16) launch_plain<16>(d, Pc, Pp, Pn, Mc, Mp, Mn, m, ih, dt*dt, p);
        else launch_plain<12>(d, Pc, Pp, Pn, Mc, Mp, Mn, m, ih, dt*dt, p);
      }
      CK(cudaGetLastError());
    }
    return steps % 3;
  };
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  std::vector<float> a(n), b(n);
  if (check) {
    init(); const int la = run(0, nt, 0, ty); CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(a.data(), buf[la], n*sizeof(float), cudaMemcpyDeviceToHost));
    init(); const int lb = run(check, nt, planes, ty); CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(b.data(), buf[lb], n*sizeof(float), cudaMemcpyDeviceToHost));
    double mx = 0, diff = 0;
    for (long i = 0; i < n; ++i) { mx = fmax(mx, fabs(a[i])); diff = fmax(diff, fabs(a[i] - b[i])); }
    {
      std::vector<double> px(d.nx, 0.0); std::vector<int> py(d.nx), pz(d.nx);
      for (int x = 0; x < d.nx; ++x) for (int y = 0; y < d.ny; ++y) for (int z = 0; z < d.nz; ++z) {
        const long i = at(d, x, y, z); const double e = fabs(a[i] - b[i]);
        if (e > px[x]) { px[x] = e; py[x] = y; pz[x] = z; }
      }
      if (getenv("DIAG")) for (int x = 0; x < d.nx; ++x) if (px[x] > 1e-6*mx || 1)
        printf("  x %d: %.3g at y %d z %d\n", x, px[x]/mx, py[x], pz[x]);
    }
    printf("check %dx%dx%d nt %d planes %d ty %d: max|P| %.4g max|diff| %.3g rel %.3g %s\n",
           d.nx, d.ny, d.nz, nt, planes, ty, mx, diff, diff/mx, diff/mx < 1e-4 ? "OK" : "FAIL");
    return diff/mx < 1e-4 ? 0 : 2;
  }
  const int ty2 = argc > 8 ? atoi(argv[8]) : 24, planes2 = argc > 9 ? atoi(argv[9]) : planes;
  for (int which = 0; which < 4; ++which) {
    const int tyw = which >= 3 ? ty2 : ty, plw = which >= 3 ? planes2 : planes;
    if (getenv("ONLY") && !strchr(getenv("ONLY"), '0' + which)) continue;   // e.g. ONLY=24
    init(); run(which, 5, plw, tyw); CK(cudaDeviceSynchronize());
    CK(cudaEventRecord(e0)); run(which, nt, plw, tyw); CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1)); float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
    printf("%s %dx%dx%d nt %d planes %d ty %d: %.3f s  %.2f GPts/s\n", which == 3 ? "fused rings" : which == 2 ? "fused tuned" : which ? "fused plain" : "two-kernel reference",
           d.nx, d.ny, d.nz, nt, plw, tyw, ms*1e-3, (double)d.nx*d.ny*d.nz*nt/(ms*1e-3)/1e9);
  }
  return 0;
}
