// Peer-simulator driver for FlashSim DFTL (FTL_IMPLEMENTATION 3).
// usage: dftl_driver L N readpct seed   (reads ./ssd.conf from cwd)
// 1) sequential fill of LPNs 0..L-1 (one page write each), 2) reset stats,
// 3) N uniform-random single-page requests over [0,L), read with prob readpct/100.
// Closed loop, queue depth 1: next start time = previous start + previous response time.
#include "ssd.h"
#include <random>
#include <cstdlib>
using namespace ssd;

static void dump(const char *tag, const Stats &s, long nreq, long nr, long nw, double sumrt) {
  long transR = s.numCacheFaults;             // one consult_GTD (translation read) per fault
  long transW = s.numGCWrite;                 // DFTL increments numGCWrite only on dirty CMT eviction
  printf("%s requests=%ld hostR=%ld hostW=%ld cacheHits=%ld cacheFaults=%ld hitRatio=%.4f "
         "transReads=%ld transWrites=%ld transR/req=%.4f transW/req=%.4f "
         "gcCopies(numWLWrite)=%ld erases(numFTLErase)=%ld numFTLRead=%ld numFTLWrite=%ld "
         "avgRT=%.3f\n", tag, nreq, nr, nw, s.numCacheHits, s.numCacheFaults,
         (double)s.numCacheHits / (double)(s.numCacheHits + s.numCacheFaults),
         transR, transW, (double)transR / nreq, (double)transW / nreq,
         s.numWLWrite, s.numFTLErase, s.numFTLRead, s.numFTLWrite, sumrt / nreq);
}

int main(int argc, char **argv) {
  if (argc < 5) { fprintf(stderr, "usage: L N readpct seed\n"); return 2; }
  long L = atol(argv[1]), N = atol(argv[2]); int readpct = atoi(argv[3]); unsigned seed = atoi(argv[4]);
  load_config();
  Ssd *ssd = new Ssd();
  const Stats &st = ssd->get_controller().stats;
  double t = 0.0, fillrt = 0.0;
  for (long i = 0; i < L; i++) { double r = ssd->event_arrive(WRITE, i, 1, t); fillrt += r; t += r + 1.0; }
  printf("FILL done: L=%ld fill avgRT=%.3f\n", L, fillrt / L);
  dump("FILL", st, L, 0, L, fillrt);
  ssd->reset_statistics();
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<long> lpn(0, L - 1);
  std::uniform_int_distribution<int> pct(0, 99);
  long nr = 0, nw = 0; double sumrt = 0, half_rt = 0; Stats half;
  for (long i = 0; i < N; i++) {
    long a = lpn(rng); bool rd = pct(rng) < readpct;
    double r = ssd->event_arrive(rd ? READ : WRITE, a, 1, t);
    sumrt += r; t += r + 1.0; rd ? nr++ : nw++;
    if (i + 1 == N / 2) { half = st; half_rt = sumrt; dump("FIRSTHALF", st, N / 2, nr, nw, sumrt); }
  }
  dump("ALL", st, N, nr, nw, sumrt);
  // second half only (steady state): difference of counters
  Stats d = st; long n2 = N - N / 2;
  d.numCacheHits -= half.numCacheHits; d.numCacheFaults -= half.numCacheFaults;
  d.numGCWrite -= half.numGCWrite; d.numWLWrite -= half.numWLWrite; d.numFTLErase -= half.numFTLErase;
  d.numFTLRead -= half.numFTLRead; d.numFTLWrite -= half.numFTLWrite;
  dump("SECONDHALF", d, n2, -1, -1, sumrt - half_rt);
  ssd->print_statistics();
  const_cast<FtlParent&>(ssd->get_controller().get_ftl()).print_ftl_statistics();
  return 0;
}
