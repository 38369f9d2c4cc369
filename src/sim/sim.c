/* sim.c - the typing simulator: see sim.h for the model and its sources. */
#include "sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/utf8.h"

/* ---- deterministic randomness: splitmix64 seeding a xoshiro256** -------- */

typedef struct { uint64_t s[4]; } rng;

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void rng_seed(rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_u64(rng *r) {
    uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t; s[3] = rotl(s[3], 45);
    return out;
}

/* Uniform in [0, 1), 53 random bits. */
static double rng_unif(rng *r) { return (double)(rng_u64(r) >> 11) * 0x1.0p-53; }

static size_t rng_below(rng *r, size_t n) { return (size_t)(rng_unif(r) * (double)n); }

/* Standard normal by Box-Muller (one of the pair; simplicity over speed). */
static double rng_normal(rng *r) {
    double u = 1.0 - rng_unif(r), v = rng_unif(r);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* A lognormal with a given mean m and sd s: sigma^2 = ln(1 + s^2/m^2),
 * mu = ln m - sigma^2/2. */
typedef struct { double mu, sigma; } lognorm;

static lognorm lognorm_of(double m, double s) {
    double s2 = log(1.0 + (s * s) / (m * m));
    return (lognorm){log(m) - 0.5 * s2, sqrt(s2)};
}

static double lognorm_draw(rng *r, lognorm d) { return exp(d.mu + d.sigma * rng_normal(r)); }

/* ---- parameters ------------------------------------------------------------ */

void sim_params_default(sim_params *p) {
    *p = (sim_params){
        .iki_mean_ms = 239, .iki_sd_ms = 112,
        .hold_mean_ms = 116, .hold_sd_ms = 30,
        .rollover = 0.25,
        .p_sub = 0.0165, .p_omit = 0.0080, .p_insert = 0.0067,
        .p_uncorrected = 0.012,
        .notice_mean_chars = 3.3,
    };
}

void sim_params_corrected(sim_params *p) {
    sim_params_default(p);
    p->p_uncorrected = 0;
}

/* The rolled component of the interval mixture: fast digraphs, well inside a
 * key hold. Its mean and sd are a modelling choice (not published); the
 * paced component is solved from them so the mixture keeps the published
 * mean and sd exactly. */
enum { ROLLED_MEAN_MS = 80, ROLLED_SD_MS = 25 };

typedef struct {
    lognorm rolled, paced, hold;
    double q;          /* share of rolled intervals */
    double p_err;      /* p_sub + p_omit + p_insert */
    double p_fix;      /* probability that a typo gets corrected */
    double p_stop;     /* geometric notice delay: P(notice after each further char) */
} mix;

static laya_status mix_init(const sim_params *p, mix *m, char *err, size_t errlen) {
    if (!(p->iki_mean_ms > ROLLED_MEAN_MS && p->iki_sd_ms > 0 && p->hold_mean_ms > 0 &&
          p->hold_sd_ms >= 0 && p->rollover >= 0 && p->rollover < 1))
        return err_set(err, errlen, LAYA_ERR_ARG,
                       "sim: interval mean must exceed %d ms, sds be positive and rollover in [0,1)",
                       ROLLED_MEAN_MS);
    double q = p->rollover, m1 = ROLLED_MEAN_MS, s1 = ROLLED_SD_MS;
    double m2 = (p->iki_mean_ms - q * m1) / (1 - q);
    double ex2 = p->iki_sd_ms * p->iki_sd_ms + p->iki_mean_ms * p->iki_mean_ms;
    double v2 = (ex2 - q * (s1 * s1 + m1 * m1)) / (1 - q) - m2 * m2;
    if (!(v2 > 0))
        return err_set(err, errlen, LAYA_ERR_ARG,
                       "sim: interval sd %.0f ms is too small for a %.0f%% rollover share",
                       p->iki_sd_ms, 100 * q);
    double e = p->p_sub + p->p_omit + p->p_insert;
    if (!(p->p_sub >= 0 && p->p_omit >= 0 && p->p_insert >= 0 && e < 0.5 &&
          p->p_uncorrected >= 0 && p->p_uncorrected <= e && p->notice_mean_chars >= 0))
        return err_set(err, errlen, LAYA_ERR_ARG,
                       "sim: typo rates must be >= 0 and sum below 0.5, p_uncorrected <= their "
                       "sum, notice_mean_chars >= 0");
    m->q = q;
    m->rolled = lognorm_of(m1, s1);
    m->paced = lognorm_of(m2, sqrt(v2));
    m->hold = p->hold_sd_ms > 0 ? lognorm_of(p->hold_mean_ms, p->hold_sd_ms)
                                : (lognorm){log(p->hold_mean_ms), 0};
    m->p_err = e;
    m->p_fix = e > 0 ? 1 - p->p_uncorrected / e : 1;
    m->p_stop = 1.0 / (1.0 + p->notice_mean_chars);
    return LAYA_OK;
}

/* ---- keyboard neighbours ------------------------------------------------- */

/* A key next to c on a US QWERTY layout (same row or the rows above and
 * below), case kept; 0 when c is not a letter or digit. */
static char qwerty_neighbour(char c, rng *r) {
    static const char *rows[] = {"1234567890", "qwertyuiop", "asdfghjkl", "zxcvbnm"};
    int upper = c >= 'A' && c <= 'Z';
    char lc = upper ? (char)(c - 'A' + 'a') : c;
    for (int row = 0; row < 4; row++) {
        const char *hit = strchr(rows[row], lc);
        if (!hit || !lc) continue;
        int col = (int)(hit - rows[row]);
        char cand[8];
        int n = 0;
        for (int dr = -1; dr <= 1; dr++) {
            int rr = row + dr;
            if (rr < 0 || rr > 3) continue;
            int w = (int)strlen(rows[rr]);
            for (int dc = -1; dc <= 1; dc++) {
                int cc = col + dc;
                if ((dr == 0 && dc == 0) || cc < 0 || cc >= w) continue;
                if (dr != 0 && dc == 1) continue;  /* rows are staggered to the right */
                cand[n++] = rows[rr][cc];
            }
        }
        char k = cand[rng_below(r, (size_t)n)];
        if (upper && k >= 'a' && k <= 'z') k = (char)(k - 'a' + 'A');
        return k;
    }
    return 0;
}

/* ---- the stream ---------------------------------------------------------- */

typedef struct { size_t off; uint8_t len; } span;

typedef struct {
    sim_event *ev;
    size_t n, cap;
    rng r;
    const mix *m;
    double t;
} stream;

static laya_status emit(stream *s, sim_kind kind, const char *bytes, size_t len, uint8_t flags) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        sim_event *ev = realloc(s->ev, cap * sizeof *ev);
        if (!ev) return LAYA_ERR_NOMEM;
        s->ev = ev;
        s->cap = cap;
    }
    /* The interval to this key is drawn now; whether the previous key rolled
     * over decides which component it comes from, and the previous key's hold
     * is drawn on the matching side of the interval. */
    if (s->n > 0) {
        sim_event *prev = &s->ev[s->n - 1];
        int rolled = rng_unif(&s->r) < s->m->q;
        double iki = lognorm_draw(&s->r, rolled ? s->m->rolled : s->m->paced), hold = 0;
        for (int tries = 0; tries < 16; tries++) {
            hold = lognorm_draw(&s->r, s->m->hold);
            if ((hold > iki) == rolled) break;
        }
        if ((hold > iki) != rolled) hold = rolled ? iki + 1 : iki - 1;
        prev->hold_ms = (float)hold;
        if (rolled) prev->flags |= SIM_F_ROLLOVER;
        s->t += iki;
    }
    sim_event *e = &s->ev[s->n++];
    memset(e, 0, sizeof *e);
    e->time_ms = s->t;
    e->hold_ms = (float)lognorm_draw(&s->r, s->m->hold);
    e->kind = (uint8_t)kind;
    e->len = (uint8_t)len;
    e->flags = flags;
    if (len) memcpy(e->bytes, bytes, len);
    return LAYA_OK;
}

/* A wrong character for target character ch: a QWERTY neighbour for ASCII
 * letters and digits, else another character of the text (an IME picking the
 * wrong candidate). Returns its span in *out or 0 if none differs. */
static int wrong_char(stream *s, const char *text, const span *chars, size_t n_chars,
                      span ch, char *buf, span *out) {
    if (ch.len == 1) {
        char k = qwerty_neighbour(text[ch.off], &s->r);
        if (k) {
            buf[0] = k;
            *out = (span){0, 1};
            return 1;
        }
    }
    for (int tries = 0; tries < 8; tries++) {
        span o = chars[rng_below(&s->r, n_chars)];
        if (o.len != ch.len || memcmp(text + o.off, text + ch.off, ch.len)) {
            memcpy(buf, text + o.off, o.len);
            *out = (span){0, o.len};
            return 1;
        }
    }
    return 0;
}

#define TRY(x) do { laya_status st_ = (x); if (st_ != LAYA_OK) goto fail; } while (0)

laya_status sim_run(const sim_params *p, uint64_t seed, const char *text, size_t len,
                    sim_event **out, size_t *n_out, char *err, size_t errlen) {
    if (!p || (!text && len) || !out || !n_out)
        return err_set(err, errlen, LAYA_ERR_ARG, "sim_run: NULL argument");
    *out = NULL;
    *n_out = 0;
    if (len > SIM_MAX_TEXT)
        return err_set(err, errlen, LAYA_ERR_LIMIT, "sim_run: text of %zu bytes exceeds %d MiB",
                       len, SIM_MAX_TEXT >> 20);
    mix m;
    laya_status st = mix_init(p, &m, err, errlen);
    if (st != LAYA_OK) return st;

    size_t n_chars = 0;
    span *chars = malloc((len ? len : 1) * sizeof *chars);
    if (!chars) return err_set(err, errlen, LAYA_ERR_NOMEM, "sim_run: out of memory");
    for (size_t i = 0; i < len;) {
        size_t e = utf8_next((const uint8_t *)text, len, i);
        chars[n_chars++] = (span){i, (uint8_t)(e - i)};
        i = e;
    }
    stream s = {.m = &m};
    rng_seed(&s.r, seed);
    char wbuf[4];
    span w;

    /* i: the next intended character; everything before it is on screen as
     * intended, apart from typos the typist never noticed. */
    for (size_t i = 0; i < n_chars;) {
        span c = chars[i];
        double u = rng_unif(&s.r);
        int kind = u < p->p_sub ? 1 : u < p->p_sub + p->p_omit ? 2 : u < m.p_err ? 3 : 0;
        if (kind == 2 && i + 1 == n_chars) kind = 0;  /* nothing left to type past it */
        if ((kind == 1 || kind == 3) && !wrong_char(&s, text, chars, n_chars, c, wbuf, &w))
            kind = 0;
        if (kind == 0) {
            TRY(emit(&s, SIM_CHAR, text + c.off, c.len, 0));
            i++;
            continue;
        }
        int fix = rng_unif(&s.r) < m.p_fix;
        size_t on_screen = 0, next = i;  /* characters typed since the error */
        if (kind == 1) {                 /* substitution */
            TRY(emit(&s, SIM_CHAR, wbuf, w.len, SIM_F_TYPO));
            on_screen = 1;
            next = i + 1;
        } else if (kind == 2) {          /* omission: type the next one instead */
            next = i + 1;
        } else {                         /* insertion: an extra key, then the right one */
            TRY(emit(&s, SIM_CHAR, wbuf, w.len, SIM_F_TYPO));
            TRY(emit(&s, SIM_CHAR, text + c.off, c.len, 0));
            on_screen = 2;
            next = i + 1;
        }
        if (!fix) {
            i = next;
            continue;
        }
        /* Typed on, unaware, until noticing (geometric; an omission is only
         * visible once at least one character follows it). */
        int must = kind == 2;
        while (next < n_chars && (must || rng_unif(&s.r) >= m.p_stop)) {
            TRY(emit(&s, SIM_CHAR, text + chars[next].off, chars[next].len, 0));
            on_screen++;
            next++;
            must = 0;
        }
        for (size_t b = 0; b < on_screen; b++) TRY(emit(&s, SIM_BACKSPACE, NULL, 0, SIM_F_CORRECTION));
        /* i stays: the typist retypes from the error (and may err again). */
    }
    free(chars);
    *out = s.ev;
    *n_out = s.n;
    return LAYA_OK;
fail:
    free(chars);
    free(s.ev);
    return err_set(err, errlen, LAYA_ERR_NOMEM, "sim_run: out of memory");
}

laya_status sim_replay(const sim_event *ev, size_t n, char **out, size_t *out_len) {
    if ((!ev && n) || !out || !out_len) return LAYA_ERR_ARG;
    size_t cap = 4 * n + 1, len = 0;
    char *buf = malloc(cap);
    if (!buf) return LAYA_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].kind == SIM_CHAR) {
            if (ev[i].len > 4) { free(buf); return LAYA_ERR_FORMAT; }
            memcpy(buf + len, ev[i].bytes, ev[i].len);
            len += ev[i].len;
        } else if (ev[i].kind == SIM_BACKSPACE) {
            len = utf8_prev((const uint8_t *)buf, len);
        } else {
            free(buf);
            return LAYA_ERR_FORMAT;
        }
    }
    buf[len] = 0;
    *out = buf;
    *out_len = len;
    return LAYA_OK;
}
