/* tuned.h - private to src/engine: every tuned default of the engine in
 * one table, each named, with the measurement that chose it (the command,
 * the figures, and the docs/RESULTS.md section where there is one).
 * Change a value only with a new measurement; scripts/same_eval.sh shows
 * what it moves, split by split. Defaults tuned outside the engine, for
 * reference: the decision's (decide_params_default, decide.c; decide.h
 * says how they were tuned), the feedback's (LEARN_FB_* in
 * src/learn/learn_fb.h), the memory's confidence and reach tables
 * (src/learn/learn_index.c), the next-word prior's lookback
 * (src/prior/prior.h). */
#ifndef LAYA_ENGINE_TUNED_H
#define LAYA_ENGINE_TUNED_H

/* ---- the search (laya_search_defaults) ---- */

/* max_steps 12 (2026-12-03, shipped model, `laya eval --engine "laya serve
 * --stdio --max-steps N"`): English 3,000 chars KSR@3 0.457 / 0.456 / 0.451
 * / 0.444 at N = 24 / 12 / 10 / 8 with p99 2.59 / 1.90 / 1.91 / 1.42 ms;
 * Chinese 1,500 chars CSR@3 0.130 / 0.125 / 0.121 at 24 / 12 / 10 with p50
 * 1.81 / 1.22 / 1.04 ms. 12 keeps the savings within a point for a quarter
 * to a third less time. Then max_tokens 4 -> 3 (max_words is 2, which 3
 * tokens nearly always reach): English 3,000 chars KSR@3 0.456 either way,
 * p50 0.95 -> 0.86 ms, p99 2.21 -> 1.67 ms; Chinese 1,500 chars CSR@3
 * 0.125 -> 0.123, p50 1.24 -> 1.15 ms. A beam of 2 costs 1.7 points of KSR.
 * min_prob 0.002 (2026-12-03, five English slices of valid.txt, 10,868
 * chars, and six Chinese, 7,950): KSR@3 0.4099 / 0.4086 / 0.4081 and
 * precision 0.264 / 0.263 / 0.264 at floors 0 / 0.002 / 0.005; Chinese
 * CSR@3 0.1788 / 0.1783 / 0.1774, precision 0.190 / 0.202 / 0.218; at 0.01
 * both lose 0.4 points. 0.002 hides what is nearly never taken (such as
 * "tile" at 0.0012 after "send the rep") for a tenth of a point. */
#define ENGINE_MAX_STEPS_DEFAULT 12
#define ENGINE_MAX_TOKENS 3
#define ENGINE_BEAM 3
#define ENGINE_MIN_PROB 0.002f
/* A suggestion spans at most two words and 48 bytes, ranked by expected
 * keystrokes saved (probability times characters, len_exp 1: suggest.c
 * engine_rank_score). These three are the engine's first values (2c21c8e)
 * and have no measurement of their own in docs/RESULTS.md: the first to
 * sweep when the ranking is next changed (issue 41 asks for it). */
#define ENGINE_MAX_WORDS 2
#define ENGINE_MAX_BYTES 48
#define ENGINE_LEN_EXP 1.0f
/* prior_weight 0.6: the trust in the model file's next-word prior
 * (docs/RESULTS.md, "The Chinese next-word prior" and "The English
 * next-word prior", 2026-12-04 and -05; blend.c engine_blend_prior). */
#define ENGINE_PRIOR_WEIGHT 0.6f
/* cjk_steps 24 (2026-12-04, the model shipped that day, `laya eval
 * --engine "laya serve --stdio [--no-learn] --max-steps N"` on the five
 * Chinese splits of docs/RESULTS.md, 2,000 chars each): CSR@3 of the model
 * alone at N = 12 / 18 / 24: valid.txt 0.126 / 0.1325 / 0.133, dialogue
 * 0.078 / 0.107 / 0.111, reviews-like notes 0.078 / 0.0915 / 0.0955,
 * manuals 0.1245 / 0.1375 / 0.138, requests 0.0335 / 0.0375 / 0.037; model
 * steps per Chinese keystroke 6.51 / 7.57 / 7.93 (`laya bench`, 8 KB of
 * valid.txt). A Chinese keystroke changes the CJK tail the first tokens
 * must cover (a run is read in 4-character chunks: every fourth character
 * moves the stable state), so most of its search is new and the 12 steps
 * that suit English end before the two-character words are found; 24 costs 22% more steps per key for 1-3
 * points of CSR on every split. English keeps max_steps (its keystrokes
 * mostly re-walk nodes kept from the last one). */
#define ENGINE_CJK_STEPS 24
/* cache_weight 0.1 (2026-12-04, the model shipped that day; the continuous
 * cache of nc.c at ENGINE_NC_SIZE positions and theta ENGINE_NC_THETA,
 * `laya eval SPLIT --max-chars 4000|2000` with learning as shipped, docs/
 * RESULTS.md "The continuous cache"): KSR@3 at weight 0 / 0.1 / 0.15 / 0.2:
 * letters 0.403 / 0.4105 / 0.411 / 0.413, dialogue 0.4185 / 0.423 / 0.420
 * / 0.4135, valid.txt 0.4975 / 0.508 / 0.513 / 0.5105, everyday 0.4515 /
 * 0.453 / 0.4465 / 0.442, manuals 0.523 / 0.530 / - / 0.534; Chinese CSR@3
 * at 0 / 0.1 / 0.2: dialogue 0.1865 / 0.1875 / 0.193, reviews-like notes
 * 0.1155 / 0.120 / 0.127, valid.txt 0.1485 / 0.1545 / 0.158. 0.1 is the
 * largest weight that loses nowhere (everyday English, text no model
 * trained on, falls from 0.15 on). */
#define ENGINE_CACHE_WEIGHT 0.1f
/* cjk_cache_weight 0.3 (2026-12-05, fifth session: the model shipped that
 * day, the cache trusted by its size, engine_nc_trust; docs/RESULTS.md "A
 * short text's cache"): CSR@3 at 0.2 / 0.3 / 0.4 over the six Chinese
 * splits: valid.txt 0.1555 / 0.1545 / 0.155 (over 8,000 characters 0.2641
 * / 0.2668), dialogue 0.198 / 0.198 / 0.1935, manuals 0.173 / 0.175 /
 * 0.171, reviews-like notes 0.131 / 0.1335 / 0.131, requests 0.0415 /
 * 0.046 / 0.048, Warzone 2100 0.1545 / 0.160 / 0.1565. (On 2026-12-04,
 * before the ramp, 0.2 won over 0.1 everywhere and 0.3 not everywhere
 * over 0.2.) Its own weight, as its own step budget: English loses on
 * everyday text from 0.15 on. */
#define ENGINE_CJK_CACHE_WEIGHT 0.3f

/* ---- the continuous cache (nc.c) ---- */

/* The positions it holds, the sharpness of its softmax over cosines and
 * the ramp of its trust n / (n + ENGINE_NC_RAMP) (nc.c says how each was
 * measured; docs/RESULTS.md, "The continuous cache" and "A short text's
 * cache"). */
enum { ENGINE_NC_SIZE = 512, ENGINE_NC_RAMP = 32 };
#define ENGINE_NC_THETA 30.0f
/* The cosine of the cache's null position (nc.c): 0.5 (2026-12-05, sixth
 * session; docs/RESULTS.md, "A cache that resembles nothing"). */
#define ENGINE_NC_NULL_COS 0.5

/* ---- the personal memory (blend.c) ---- */

/* The memory's default kappa (learn_index.h: its confidence is
 * N / (N + kappa / order)), chosen on held-out text (blend.c). */
#define ENGINE_LEARN_KAPPA 1.0
/* The committed history needs twice the evidence of the text typed in the
 * session: it holds other documents too, whose common words completed
 * from memory cost first-pass KSR (0.4137 -> 0.4109 English with it, 0.4068
 * at 1x; the second pass keeps 0.974), while the session's own text is
 * the document at hand. */
#define ENGINE_HISTORY_KAPPA 2.0

/* ---- computing ahead (laya_session_prefetch) ---- */

/* Next keys computed ahead: the best suggestion's first character is the
 * next key in 48% of English keystrokes, the two best first characters in
 * 55% (the median keystroke then a guess that was right: docs/RESULTS.md,
 * "Computing ahead between keys"). */
enum { ENGINE_GUESSES = 2 };

#endif
