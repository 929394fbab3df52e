/* phasecheck's SPIN baseline (docs/performance.md): run it with bench/spin/run.sh NC K. */
/* Warp-specialised double-buffer pipeline on mbarriers (parity waits).
   One producer thread, NC consumer threads, K iterations, 2 stages.
   full[s]: expected arrivals 1; empty[s]: expected arrivals NC.
   wait_parity(b, p) passes iff the barrier's current phase parity != p. */
#ifndef NC
#define NC 4
#endif
#ifndef K
#define K 4
#endif
byte fullpend[2]; bit fullph[2];
byte emptypend[2]; bit emptyph[2];
byte buf[2];

inline arrive_full(s) { atomic { fullpend[s]--; if :: fullpend[s]==0 -> fullpend[s]=1; fullph[s] = 1-fullph[s] :: else -> skip fi } }
inline arrive_empty(s) { atomic { emptypend[s]--; if :: emptypend[s]==0 -> emptypend[s]=NC; emptyph[s]=1-emptyph[s] :: else -> skip fi } }

active proctype producer() {
  byte k = 0; byte s; bit ph;
  do :: k < K ->
       s = k % 2; ph = (k/2) % 2;
       (emptyph[s] != (1-ph));
       buf[s] = k;
       arrive_full(s);
       k++
     :: else -> break
  od
}
active [NC] proctype consumer() {
  byte k = 0; byte s; bit ph;
  do :: k < K ->
       s = k % 2; ph = (k/2) % 2;
       (fullph[s] != ph);
       assert(buf[s] == k);
       arrive_empty(s);
       k++
     :: else -> break
  od
}
