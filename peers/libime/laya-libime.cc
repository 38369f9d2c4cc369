/* laya-libime.cc - libime (fcitx5's Chinese engine; Debian libimecore and
 * libime-data-language-model) behind the JSON-lines suggestion protocol of
 * docs/PROTOCOL.md, so `laya eval --engine` measures its word prediction
 * with the same harness and the same simulated typist as Laya.
 *
 *   laya-libime [--static] [--lm FILE] [--predict FILE]
 *
 * libime predicts the next word from the words committed so far: the
 * prediction table (<model>.predict: at most 15 followers per word) proposes,
 * the language model (a KenLM n-gram model, zh_CN.lm) ranks. An IME knows
 * its committed words; here they are recovered from the context:
 *   - only the trailing run of Han characters counts, at most its last
 *     TAIL_CHARS: anything else (punctuation, line breaks, Latin letters,
 *     digits, blanks) is unknown to the model and to the table, so it ends
 *     what can be predicted from (right after it nothing is suggested, as an
 *     IME shows nothing before the first committed word);
 *   - the run is cut into words by forward maximum matching over the model's
 *     vocabulary (a word is known when its index is not the unknown index;
 *     at most MAX_WORD_CHARS characters); an unknown character stays single.
 * The typist types Chinese one character at a time, so the last word may be
 * the start of a longer one. The suggestions, to insert at the cursor, are
 *   (a) completions: the words predicted after all but the last word that
 *       start with the last word and are longer, minus what is typed;
 *   (b) next words: the words predicted after all the words, whole;
 * (a) first, then (b), up to k, without duplicates or empty strings. Both
 * draw from the whole table entry (POOL), not libime's first 2k trie entries
 * that predict(.., k) would rank. "us" is the time of the predict() calls
 * only, in microseconds (segmenting is the adapter's stand-in for the IME's
 * commit history).
 *
 * Learning (the default), as fcitx5's pinyin engine does it: the model is a
 * libime::UserLanguageModel, the static model mixed with a HistoryBigram of
 * what the user committed (history weight 0.3, libime's default), and the
 * prediction also draws candidates from that history (the words that
 * followed the last word there). {"op":"commit"} text is cut into its Han
 * runs, each run into words as above, and each run is added to the history
 * as one sentence, as fcitx5 adds each committed sentence. The history
 * lives in this process only: it starts empty, is never read from or
 * written to a file (not the user's ~/.local/share/fcitx5 either) and ends
 * with the process. reset ends a session, not the history. Words stay
 * those of the model's vocabulary: a name the model does not know is
 * learned character by character (fcitx5 would also learn it into its
 * pinyin user dictionary, which prediction does not use).
 * --static: the static model alone, as before learning existed; commit is
 * acknowledged and ignored. score is not supported. */
#include <libime/core/historybigram.h>
#include <libime/core/languagemodel.h>
#include <libime/core/lattice.h>
#include <libime/core/prediction.h>
#include <libime/core/userlanguagemodel.h>

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#ifndef LAYA_LIBIME_LM
#define LAYA_LIBIME_LM "/usr/lib/x86_64-linux-gnu/libime/zh_CN.lm"
#endif

namespace {

constexpr size_t TAIL_CHARS = 64, MAX_WORD_CHARS = 6, POOL = 64;
constexpr int MAX_K = 16;

void reply(json_t *j) {
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    puts(s ? s : "{\"error\":\"out of memory\"}");
    free(s);
    fflush(stdout);
}

void reply_error(const char *msg) { reply(json_pack("{s:s}", "error", msg)); }
void reply_ok() { reply(json_pack("{s:b}", "ok", 1)); }

double now_us() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* CJK ideographs: the unified blocks, their extensions and compatibility
 * ideographs, and 〇. */
bool is_han(unsigned c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x20000 && c <= 0x3134F) || c == 0x3007;
}

/* The start of the UTF-8 character ending at s[end - 1], and its code point.
 * The context is valid UTF-8: jansson checks it. */
size_t char_before(std::string_view s, size_t end, unsigned *cp) {
    size_t i = end - 1;
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80) i--;
    unsigned char b = (unsigned char)s[i];
    unsigned c = b < 0x80 ? b : b < 0xE0 ? b & 0x1F : b < 0xF0 ? b & 0x0F : b & 0x07;
    for (size_t j = i + 1; j < end; j++) c = c << 6 | ((unsigned char)s[j] & 0x3F);
    *cp = c;
    return i;
}

/* s[at[0]..at[n]) cut into words by forward maximum matching over the
 * model's vocabulary; at holds the n + 1 character boundaries. */
std::vector<std::string> cut(const libime::LanguageModelBase &lm, std::string_view s,
                             const std::vector<size_t> &at) {
    std::vector<std::string> words;
    for (size_t i = 0, n = at.size() - 1; i < n;) {
        size_t len = std::min(MAX_WORD_CHARS, n - i);
        while (len > 1 && lm.index(s.substr(at[i], at[i + len] - at[i])) == lm.unknown()) len--;
        words.emplace_back(s.substr(at[i], at[i + len] - at[i]));
        i += len;
    }
    return words;
}

/* The trailing Han run of ctx (its last TAIL_CHARS characters) in words. */
std::vector<std::string> segment(const libime::LanguageModelBase &lm, std::string_view ctx) {
    std::vector<size_t> at{ctx.size()};   /* character starts, last first */
    unsigned cp;
    for (size_t end = ctx.size(); end > 0 && at.size() <= TAIL_CHARS;) {
        size_t i = char_before(ctx, end, &cp);
        if (!is_han(cp)) break;
        at.push_back(end = i);
    }
    std::reverse(at.begin(), at.end());
    return cut(lm, ctx, at);
}

/* Every Han run of a committed text, in words, into the history (see the
 * top of the file). Returns the number of sentences added. */
size_t learn(libime::UserLanguageModel &ulm, std::string_view text) {
    size_t added = 0;
    std::vector<size_t> at;
    auto flush = [&](size_t end) {
        if (!at.empty()) {
            at.push_back(end);
            ulm.history().add(cut(ulm, text, at));
            added++;
            at.clear();
        }
    };
    for (size_t i = 0; i < text.size();) {   /* valid UTF-8: jansson checked it */
        unsigned char b = (unsigned char)text[i];
        size_t len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
        unsigned cp;
        char_before(text, std::min(i + len, text.size()), &cp);
        if (is_han(cp)) at.push_back(i);
        else flush(i);
        i += len;
    }
    flush(text.size());
    return added;
}

/* pred.predict(words, n), with the words' state built here: libime 1.0.16's
 * Prediction::predict(sentence) keeps its WordNodes in a vector that grows
 * while a UserLanguageModel state points at the previous node (a read of
 * freed memory that valgrind reports on every prediction after two words
 * or more; fixed upstream by reserving the vector). */
std::vector<std::string> predict(const libime::LanguageModelBase &lm, libime::Prediction &pred,
                                 const std::vector<std::string> &words, size_t n) {
    std::vector<libime::WordNode> nodes;
    nodes.reserve(words.size());
    libime::State state = lm.nullState(), next;
    for (const std::string &w : words) {
        nodes.emplace_back(w, lm.index(w));
        lm.score(state, nodes.back(), next);
        state = next;
    }
    return pred.predict(state, words, n);
}

void suggest(const libime::LanguageModelBase &lm, libime::Prediction &pred, std::string_view ctx,
             size_t k) {
    std::vector<std::string> words = segment(lm, ctx), out;
    auto add = [&](std::string s) {
        if (!s.empty() && out.size() < k && std::find(out.begin(), out.end(), s) == out.end())
            out.push_back(std::move(s));
    };
    double us = 0;
    if (words.size() >= 2) {   /* (a); libime predicts nothing after no word */
        std::string part = std::move(words.back());
        words.pop_back();
        double t0 = now_us();
        std::vector<std::string> cands = predict(lm, pred, words, POOL);
        us += now_us() - t0;
        for (const std::string &w : cands)
            if (w.size() > part.size() && !w.compare(0, part.size(), part)) add(w.substr(part.size()));
        words.push_back(std::move(part));
    }
    if (!words.empty()) {      /* (b) */
        double t0 = now_us();
        std::vector<std::string> cands = predict(lm, pred, words, POOL);
        us += now_us() - t0;
        for (const std::string &w : cands) add(w);
    }
    json_t *arr = json_array();
    for (const std::string &s : out) {
        json_t *js = json_stringn(s.data(), s.size());   /* NULL for invalid UTF-8 */
        if (js) json_array_append_new(arr, js);
    }
    reply(json_pack("{s:o,s:f}", "suggestions", arr, "us", us));
}

/* The model with its prediction table loaded. libime reads the table from
 * "<model>.predict" only; another --predict file is offered to it through a
 * private directory of two symbolic links, removed once both are loaded. */
std::shared_ptr<const libime::StaticLanguageModelFile> load(const std::string &lm_path,
                                                           const std::string &predict_path) {
    if (predict_path == lm_path + ".predict") {
        auto f = std::make_shared<const libime::StaticLanguageModelFile>(lm_path.c_str());
        f->predictionTrie();
        return f;
    }
    char lm_abs[PATH_MAX], pr_abs[PATH_MAX];
    const char *t = getenv("TMPDIR");
    std::string dir = std::string(t && *t ? t : "/tmp") + "/laya-libime-XXXXXX";
    if (!realpath(lm_path.c_str(), lm_abs) || !realpath(predict_path.c_str(), pr_abs) ||
        !mkdtemp(dir.data()))
        throw std::runtime_error(std::string("cannot link the files: ") + strerror(errno));
    std::string lm_link = dir + "/zh.lm", pr_link = lm_link + ".predict";
    std::shared_ptr<const libime::StaticLanguageModelFile> f;
    try {
        if (symlink(lm_abs, lm_link.c_str()) || symlink(pr_abs, pr_link.c_str()))
            throw std::runtime_error(std::string("cannot link the files: ") + strerror(errno));
        f = std::make_shared<const libime::StaticLanguageModelFile>(lm_link.c_str());
        f->predictionTrie();
    } catch (...) {
        unlink(pr_link.c_str()), unlink(lm_link.c_str()), rmdir(dir.c_str());
        throw;
    }
    unlink(pr_link.c_str()), unlink(lm_link.c_str()), rmdir(dir.c_str());
    return f;
}

void usage(FILE *f) {
    fprintf(f, "usage: laya-libime [--static] [--lm FILE] [--predict FILE]\n"
               "JSON lines on stdin/stdout (docs/PROTOCOL.md) over libime's word prediction.\n"
               "  --static        the static model only: commits are not learned\n"
               "  --lm FILE       language model (default %s)\n"
               "  --predict FILE  prediction table (default: the model's path + .predict)\n",
            LAYA_LIBIME_LM);
}

}  // namespace

int main(int argc, char **argv) {
    std::string lm_path = LAYA_LIBIME_LM, predict_path;
    bool is_static = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--static")) is_static = true;
        else if (!strcmp(argv[i], "--lm") && i + 1 < argc) lm_path = argv[++i];
        else if (!strcmp(argv[i], "--predict") && i + 1 < argc) predict_path = argv[++i];
        else if (!strcmp(argv[i], "--help")) { usage(stdout); return 0; }
        else { usage(stderr); return 2; }
    }
    if (predict_path.empty()) predict_path = lm_path + ".predict";
    for (const std::string &p : {lm_path, predict_path})
        if (access(p.c_str(), R_OK)) {
            fprintf(stderr, "laya-libime: cannot read %s: %s (apt-get install "
                            "libime-data-language-model, or give --lm/--predict)\n",
                    p.c_str(), strerror(errno));
            return 2;
        }
    std::shared_ptr<const libime::StaticLanguageModelFile> file;
    try {
        file = load(lm_path, predict_path);
    } catch (const std::exception &e) {
        fprintf(stderr, "laya-libime: cannot load %s: %s\n", lm_path.c_str(), e.what());
        return 2;
    }
    if (file->predictionTrie().size() == 0) {
        fprintf(stderr, "laya-libime: %s is empty or not a libime prediction table\n",
                predict_path.c_str());
        return 2;
    }
    /* learning: the user model and its history; static: the model alone */
    libime::UserLanguageModel ulm(file);
    libime::LanguageModel slm(file);
    const libime::LanguageModelBase &lm = is_static ? (const libime::LanguageModelBase &)slm : ulm;
    libime::Prediction pred;
    if (is_static) pred.setLanguageModel(&slm);
    else pred.setUserLanguageModel(&ulm);
    size_t commits = 0, sentences = 0;

    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    while ((len = getline(&line, &lcap, stdin)) >= 0) {
        json_error_t je;
        json_t *req = json_loadb(line, (size_t)len, 0, &je);
        const char *op = json_string_value(json_object_get(req, "op"));
        if (!req || !op) {
            reply_error(req ? "request has no \"op\"" : "malformed JSON");
        } else if (!strcmp(op, "suggest")) {
            json_t *c = json_object_get(req, "context"), *kk = json_object_get(req, "k");
            json_int_t k = kk ? json_integer_value(kk) : 3;
            if (!json_is_string(c) || (kk && !json_is_integer(kk)) || k < 1 || k > MAX_K)
                reply_error("suggest needs \"context\" (string) and \"k\" in 1..16");
            else
                suggest(lm, pred, std::string_view(json_string_value(c), json_string_length(c)),
                        (size_t)k);
        } else if (!strcmp(op, "commit")) {
            json_t *t = json_object_get(req, "text");
            if (!json_is_string(t)) {
                reply_error("commit needs \"text\" (string)");
            } else {
                if (!is_static)
                    commits++, sentences += learn(ulm, std::string_view(json_string_value(t), json_string_length(t)));
                reply_ok();
            }
        } else if (!strcmp(op, "reset") || !strcmp(op, "feedback")) {
            reply_ok();
        } else if (!strcmp(op, "score")) {
            reply_error("score is not supported by this peer");
        } else {
            reply_error("unsupported op");
        }
        json_decref(req);
    }
    free(line);
    if (!is_static)
        fprintf(stderr, "laya-libime: learned %zu commits, %zu sentences (history kept in memory only)\n", commits,
                sentences);
    return 0;
}
