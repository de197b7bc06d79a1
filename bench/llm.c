/* `topos bench llm MODEL.gguf [--json] [--reps R] [--threads 1,2]
 * [--tests pp64,pp512,tg32,tg128] [--kv f32|f16] [--exact] [--peer LLAMA_BENCH]
 * [--no-stream]`:
 * a llama-bench-like table.
 *
 *   ppN   one chunk of N prompt tokens into an empty context of N slots
 *   tgN   N tokens decoded one at a time into an empty context of N slots
 *   ppN@dD, tgN@dD   the same after an untimed prompt of D tokens, in a
 *         context of D + N slots: a conversation's later turns,
 *         where every decoded token also reads the D + i cached keys and
 *         values. Their bound counts those bytes too (bandwidth / (weights +
 *         the cache read at the mean position)). The peer is not run for
 *         them: the llama-bench at hand (c392e50) has no depth option, and
 *         a rate derived from its pp D and pg D,N runs (N / their time's
 *         difference) moved by 30 % between two invocations.
 * tokens/s as mean ± stdev over R runs (after one warm-up run that also
 * compiles the plans), at each thread count; the row's peak RSS (see
 * lb_peak_reset) and the memory target file + KV cache + 10%. A STREAM-style read bandwidth is
 * measured right before and after each row (the higher one is used), and
 * decode is reported as a
 * fraction of bandwidth / weight bytes per token (the memory-bound ceiling).
 * --no-stream skips that read (two 256 MiB passes of about a second per
 * row: a quick look, or the tests): no bandwidth, bound or fraction then.
 * --json prints one object per row instead of the table.
 *
 * --peer PATH (or $TOPOS_LLAMA_BENCH) names a llama.cpp `llama-bench`
 * binary: each row is then measured by it too, on the same file with the
 * same test, threads and repetitions, one of its runs after each of ours (so
 * both see the same minutes), and the table gains its t/s and the ratio (the
 * machine is shared: only same-run ratios hold).
 *
 * On Linux the table ends with how much of the model's resident mapping is
 * in 2 MiB pages (FilePmdMapped in /proc/self/smaps): a file the page cache
 * holds in small folios (written or read before without huge pages) maps in
 * 4 KiB pages, and its products read weights 10-20 % slower (SmolLM2's
 * Q8_0 output head 11-13.8 against 14.9-15.9 GB/s; its decoding 105-112
 * against 112-117 tokens/s); one dropped from the cache first is read back
 * in 2 MiB folios through the MADV_HUGEPAGE mapping. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/error.h"
#include "bench/stream.h"
#include "tools/cli.h"

/* In a child process, so the 256 MiB buffer never counts in our peak RSS. */
static double lb_stream_read_isolated(int threads) {
  int fd[2];
  if (pipe(fd) != 0) return 0;
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    close(fd[0]);
    close(fd[1]);
    return 0;
  }
  if (pid == 0) {
    close(fd[0]);
    double bw = tp_bench_stream_read(threads);
    ssize_t w = write(fd[1], &bw, sizeof bw);
    _exit(w == (ssize_t)sizeof bw ? 0 : 1);
  }
  close(fd[1]);
  double bw = 0;
  if (read(fd[0], &bw, sizeof bw) != (ssize_t)sizeof bw) bw = 0;
  close(fd[0]);
  waitpid(pid, NULL, 0);
  return bw;
}

/* Each row's own peak where the kernel lets the high-water mark be reset
 * (Linux: "5" to /proc/self/clear_refs sets VmHWM to the current resident
 * size): the row's context, plans and runs on top of what the process holds
 * (the mapped model, the libraries, the previous rows' thread temporaries).
 * Elsewhere the process's peak so far (getrusage). */
static int lb_peak_reset(void) {
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if (!f) return 0;
  int ok = fputs("5", f) >= 0;
  return fclose(f) == 0 && ok;
}

static double lb_peak_rss_mb(int per_row) {
  if (per_row) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && kb < 0 && fgets(line, sizeof line, f))
      if (sscanf(line, "VmHWM: %ld kB", &kb) != 1) kb = -1;
    if (f) fclose(f);
    if (kb >= 0) return (double)kb / 1024.0;
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_maxrss / 1024.0; /* kilobytes on Linux */
}

/* llama-bench's t/s for one test (jsonl output, one run); 0 when it could
 * not be run or read. */
static int lb_peer(const char *peer, const char *model, int is_pp, int64_t n, int threads, double *tps) {
  char cmd[4096];
  int len = snprintf(cmd, sizeof cmd, "'%s' -m '%s' -t %d -r 1 -o jsonl -p %lld -n %lld 2>/dev/null", peer,
                     model, threads, (long long)(is_pp ? n : 0), (long long)(is_pp ? 0 : n));
  if (len < 0 || (size_t)len >= sizeof cmd || strchr(peer, '\'') || strchr(model, '\'')) return 0;
  FILE *f = popen(cmd, "r");
  if (!f) return 0;
  char line[8192];
  int ok = 0;
  while (fgets(line, sizeof line, f)) {
    const char *a = strstr(line, "\"avg_ts\":");
    if (a) ok = sscanf(a + 9, "%lf", tps) == 1;
  }
  return pclose(f) == 0 && ok;
}

/* Resident MiB of the mappings of `path` and how many of them are in 2 MiB
 * pages (Linux smaps); 0 where that cannot be read. */
static int lb_mapped_pages(const char *path, double *rss_mb, double *pmd_mb) {
  char *real = realpath(path, NULL);
  FILE *f = real ? fopen("/proc/self/smaps", "r") : NULL;
  if (!f) {
    free(real);
    return 0;
  }
  char line[4608];
  const size_t rl = strlen(real);
  int inside = 0, found = 0;
  long long rss = 0, pmd = 0, v;
  while (fgets(line, sizeof line, f)) {
    size_t len = strlen(line);
    while (len && (line[len - 1] == '\n' || line[len - 1] == ' ')) line[--len] = '\0';
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) { /* a mapping's header: range, perms, offset, dev, inode, path */
      inside = len >= rl && strcmp(line + len - rl, real) == 0;
      found |= inside;
    } else if (inside && sscanf(line, "Rss: %lld kB", &v) == 1) {
      rss += v;
    } else if (inside && sscanf(line, "FilePmdMapped: %lld kB", &v) == 1) {
      pmd += v;
    }
  }
  fclose(f);
  free(real);
  *rss_mb = (double)rss / 1024.0, *pmd_mb = (double)pmd / 1024.0;
  return found;
}

/* One timed run of a test, after its untimed prompt of `depth` tokens;
 * *seconds: the test's tokens alone. */
static topos_status lb_run(topos_llama_context *ctx, int is_pp, int64_t n, int64_t depth,
                           const int32_t *tokens, float *logits, double *seconds) {
  topos_llama_reset(ctx);
  if (depth) TP_TRY(topos_llama_eval(ctx, tokens, depth, 0, logits));
  tokens += depth;
  double t0 = tp_cli_now();
  if (is_pp) {
    TP_TRY(topos_llama_eval(ctx, tokens, n, 0, logits));
  } else {
    for (int64_t i = 0; i < n; ++i) TP_TRY(topos_llama_eval(ctx, tokens + i, 1, 0, logits));
  }
  *seconds = tp_cli_now() - t0;
  return TOPOS_OK;
}

/* "a,b,c" -> out[0..*n): each item whole and valid (lb_item), at most `most`
 * items. Returns 0 with a message naming the bad item. */
enum { LB_MOST = 16 };
typedef struct {
  int is_pp;
  long n;     /* tokens, or a thread count */
  long depth; /* tokens in the context before the test's (ppN@dD, tgN@dD) */
} lb_item;
enum { LB_MOST_DEPTH = 16384 };

static int lb_parse_list(const char *flag, const char *list, int tests, lb_item *out, int *n) {
  char buf[256];
  if (strlen(list) >= sizeof buf) {
    fprintf(stderr, "topos bench llm: %s: the list is too long\n", flag);
    return 0;
  }
  snprintf(buf, sizeof buf, "%s", list);
  *n = 0;
  for (char *save = NULL, *it = strtok_r(buf, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
    lb_item x = {0, 0, 0};
    int ok;
    if (tests) {
      x.is_pp = strncmp(it, "pp", 2) == 0;
      char *at = strstr(it, "@d");
      if (at) *at = '\0';
      ok = (x.is_pp || strncmp(it, "tg", 2) == 0) && tp_cli_long(it + 2, 1, 512, &x.n) &&
           (!at || tp_cli_long(at + 2, 1, LB_MOST_DEPTH, &x.depth));
      if (at) *at = '@';
    } else {
      ok = tp_cli_long(it, 1, 256, &x.n);
    }
    if (!ok || *n == LB_MOST) {
      fprintf(stderr, "topos bench llm: %s: '%s' is not %s\n", flag, it,
              *n == LB_MOST ? "needed (16 items at most)"
              : tests      ? "ppN or tgN with N in 1..512, or either with @dD, D in 1..16384"
                           : "a thread count in 1..256");
      return 0;
    }
    out[(*n)++] = x;
  }
  if (*n == 0) fprintf(stderr, "topos bench llm: %s: an empty list\n", flag);
  return *n > 0;
}

static int lb_command(int argc, char **argv) {
  const char *path = NULL, *tests = "pp64,pp512,tg32,tg128", *threads_list = "1,2";
  const char *peer = getenv("TOPOS_LLAMA_BENCH");
  int json = 0, reps = 3, exact = 0, stream = 1;
  topos_dtype kv = TOPOS_F32;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--json") == 0) json = 1;
    else if (strcmp(argv[i], "--exact") == 0) exact = 1;
    else if (strcmp(argv[i], "--no-stream") == 0) stream = 0;
    else if (strcmp(argv[i], "--kv") == 0 && i + 1 < argc) {
      long threads_unused = 0; /* --threads here is a list, parsed below */
      if (tp_cli_run_flag("bench llm", "--kv", argv[++i], &threads_unused, &kv) != 1) return 2;
    }
    else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      long r;
      if (!tp_cli_long(argv[++i], 1, 1000, &r))
        return tp_cli_bad_value("bench llm", "--reps", argv[i], "a count in 1..1000");
      reps = (int)r;
    }
    else if (strcmp(argv[i], "--tests") == 0 && i + 1 < argc) tests = argv[++i];
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads_list = argv[++i];
    else if (strcmp(argv[i], "--peer") == 0 && i + 1 < argc) peer = argv[++i];
    else if (argv[i][0] != '-' && !path) path = argv[i];
    else goto usage;
  }
  if (!path) {
    if (argc == 1) { /* `topos bench all`: nothing to run without a model */
      printf("bench llm: needs a model (topos bench llm MODEL.gguf); skipped\n");
      return 0;
    }
    goto usage;
  }
  lb_item thread_items[LB_MOST], test_items[LB_MOST];
  int n_threads = 0, n_tests = 0;
  if (!lb_parse_list("--threads", threads_list, 0, thread_items, &n_threads) ||
      !lb_parse_list("--tests", tests, 1, test_items, &n_tests))
    return 2;
  if (peer && !*peer) peer = NULL;
  topos_llama *model = NULL;
  topos_status st = topos_llama_open(path, &model);
  if (st != TOPOS_OK) return tp_cli_fail("bench llm", st, path);
  const topos_llama_config *c = topos_llama_config_of(model);
  uint64_t file_bytes = topos_gguf_file_size(topos_llama_gguf(model));
  const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  if (!json) {
    printf("model: %s  (%.1f MiB, weights read per token %.1f MiB; dim %lld, %lld blocks, "
           "%lld/%lld heads, ff %lld, vocab %lld; %s)\n", name, (double)file_bytes / 1048576.0,
           (double)c->weight_bytes / 1048576.0, (long long)c->dim, (long long)c->n_layers,
           (long long)c->n_heads, (long long)c->n_kv_heads, (long long)c->ff,
           (long long)c->n_vocab, exact ? "exact" : "fast");
    if (peer) printf("peer: %s (llama.cpp llama-bench), one run after each of ours\n", peer);
    printf("| %-28s | %11s | %7s | %18s | %9s | %9s | %8s |%s\n", "model", "test", "threads",
           "t/s", "bw GB/s", "of bound", "peak MB", peer ? "    llama.cpp t/s |  ratio |" : "");
    printf("|%s|%s|%s|%s|%s|%s|%s|%s\n", "------------------------------", "-------------", "---------",
           "--------------------", "-----------", "-----------", "----------",
           peer ? "--------------------|--------|" : "");
  }
  int64_t most_tokens = 1;
  for (int ki = 0; ki < n_tests; ++ki)
    if (test_items[ki].depth + test_items[ki].n > most_tokens) most_tokens = test_items[ki].depth + test_items[ki].n;
  int32_t *tokens = malloc((size_t)most_tokens * sizeof *tokens);
  float *logits = malloc((size_t)c->n_vocab * sizeof *logits);
  if (!tokens || !logits) {
    fprintf(stderr, "topos bench llm: out of memory\n");
    return 1;
  }
  topos_rng rng = topos_rng_seed(1234);
  for (int64_t i = 0; i < most_tokens; ++i) tokens[i] = (int32_t)(topos_rng_next(&rng) % (uint64_t)c->n_vocab);
  int rc = 0;
  for (int ti = 0; ti < n_threads && !rc; ++ti) {
    const int threads = (int)thread_items[ti].n;
    if ((st = topos_set_threads(threads)) != TOPOS_OK) {
      rc = tp_cli_fail("bench llm", st, "--threads");
      break;
    }
    for (int ki = 0; ki < n_tests && !rc; ++ki) {
      const int is_pp = test_items[ki].is_pp;
      const int64_t n = test_items[ki].n, depth = test_items[ki].depth;
      char test[32];
      if (depth) snprintf(test, sizeof test, "%s%lld@d%lld", is_pp ? "pp" : "tg", (long long)n, (long long)depth);
      else snprintf(test, sizeof test, "%s%lld", is_pp ? "pp" : "tg", (long long)n);
      topos_llama_context_options o = topos_llama_context_options_default();
      o.n_ctx = depth + n;
      o.numerics = exact ? TOPOS_NUMERICS_EXACT : TOPOS_NUMERICS_FAST;
      o.kv_dtype = kv;
      topos_llama_context *ctx = NULL;
      double secs, sum = 0, sum2 = 0;
      /* the machine is shared: bandwidth right before and after each row, the
       * higher one (a conservative bound) */
      double bw = stream ? lb_stream_read_isolated(threads) : 0;
      const int per_row = lb_peak_reset();
      st = topos_llama_context_new(model, &o, &ctx);
      if (st == TOPOS_OK) st = lb_run(ctx, is_pp, n, depth, tokens, logits, &secs); /* warm-up */
      /* ours and the peer alternate, one run each, so that both see the same
       * minutes of a shared machine (each peer call is one llama-bench run
       * after its own warm-up) */
      double psum = 0, psum2 = 0;
      int have_peer = peer != NULL && !depth;
      for (int r = 0; st == TOPOS_OK && r < reps; ++r) {
        st = lb_run(ctx, is_pp, n, depth, tokens, logits, &secs);
        double tps = (double)n / secs;
        sum += tps;
        sum2 += tps * tps;
        double pm = 0;
        if (st == TOPOS_OK && have_peer) have_peer = lb_peer(peer, path, is_pp, n, threads, &pm);
        psum += pm;
        psum2 += pm * pm;
      }
      double bw_after = stream ? lb_stream_read_isolated(threads) : 0;
      if (bw_after > bw) bw = bw_after;
      uint64_t cache_bytes = topos_llama_cache_bytes(ctx);
      topos_llama_context_free(ctx);
      if (st != TOPOS_OK) {
        rc = tp_cli_fail("bench llm", st, test);
        break;
      }
      double pmean = psum / reps, pvar = reps > 1 ? (psum2 - psum * pmean) / (reps - 1) : 0;
      double psd = pvar > 0 ? sqrt(pvar) : 0;
      double mean = sum / reps, var = reps > 1 ? (sum2 - sum * mean) / (reps - 1) : 0;
      double sd = var > 0 ? sqrt(var) : 0, peak = lb_peak_rss_mb(per_row);
      /* tokens/s if every weight byte streams once, and the cached keys and
       * values at the test's mean position (a depth test's) */
      const double kv_read = depth ? (double)cache_bytes * ((double)depth + 0.5 * (double)n) / (double)(depth + n) : 0;
      double bound = bw / ((double)c->weight_bytes + kv_read);
      double target_mb = 1.1 * (double)(file_bytes + cache_bytes) / 1048576.0;
      if (json) {
        printf("{\"bench\":\"llm\",\"model\":\"%s\",\"test\":\"%s\",\"threads\":%d,\"tps\":%.3f,"
               "\"stdev\":%.3f,\"peak_rss_mb\":%.1f,",
               name, test, threads, mean, sd, peak);
        if (stream)
          printf("\"stream_gbs\":%.3f,\"bound_tps\":%.3f,\"of_bound\":%.3f,", bw / 1e9, bound,
                 is_pp ? 0.0 : mean / bound);
        printf("\"mem_target_mb\":%.1f,\"numerics\":\"%s\",\"depth\":%lld", target_mb, exact ? "exact" : "fast",
               (long long)depth);
        if (have_peer)
          printf(",\"peer\":\"llama.cpp\",\"peer_tps\":%.3f,\"peer_stdev\":%.3f,\"ratio\":%.3f", pmean,
                 psd, mean / pmean);
        printf("}\n");
      } else {
        char tps[32], of[16], gbs[16];
        snprintf(tps, sizeof tps, "%.2f ± %.2f", mean, sd);
        if (is_pp || !stream) snprintf(of, sizeof of, "-");
        else snprintf(of, sizeof of, "%.0f%%", 100.0 * mean / bound);
        if (stream) snprintf(gbs, sizeof gbs, "%.2f", bw / 1e9);
        else snprintf(gbs, sizeof gbs, "-");
        printf("| %-28.28s | %11s | %7d | %18s | %9s | %9s | %8.0f |", name, test, threads, tps, gbs, of, peak);
        if (have_peer) printf(" %8.2f ± %7.2f | %5.2fx |", pmean, psd, mean / pmean);
        else if (peer) printf(" %18s | %6s |", depth ? "-" : "(failed)", "-");
        printf("\n");
      }
      fflush(stdout);
    }
  }
  if (!json && !rc) {
    /* the largest cache a test above asked for: keys and values of every attention block */
    size_t cache = 0;
    topos_dtype_bytes(kv, 2 * (c->n_layers - c->n_conv_layers) * c->n_kv_heads * c->head_dim * most_tokens, &cache);
    printf("memory target (file + largest KV cache + 10%%): %.0f MB; bound = stream read "
           "bandwidth / %.1f MiB of weights per token (@dD: and the cache read)\n",
           1.1 * (double)(file_bytes + cache) / 1048576.0, (double)c->weight_bytes / 1048576.0);
    double rss_mb = 0, pmd_mb = 0;
    /* files from 8 MiB are mapped asking for huge pages (io/gguf_reader.c) */
    if (lb_mapped_pages(path, &rss_mb, &pmd_mb)) {
      const int small_folios = pmd_mb < 0.9 * rss_mb && file_bytes >= ((uint64_t)8 << 20);
      printf("model mapping: %.0f MiB resident, %.0f MiB of it in 2 MiB pages%s\n", rss_mb, pmd_mb,
             small_folios ? " (the page cache held the file in small folios: decoding reads 4 KiB pages "
                            "and may be 5-10 % slower; drop the file from the cache and rerun)"
                          : "");
    }
  }
  free(tokens);
  free(logits);
  topos_llama_free(model);
  return rc;
usage:
  fprintf(stderr, "usage: topos bench llm MODEL.gguf [--json] [--reps R] [--threads 1,2] "
          "[--tests pp64,pp512,tg32,tg128] [--kv f32|f16] [--exact] [--peer LLAMA_BENCH] [--no-stream]\n");
  return 2;
}

TOPOS_COMMAND("bench-llm", "llama GGUF: prompt and generation tokens/s, memory (llama-bench-like)",
              lb_command)
