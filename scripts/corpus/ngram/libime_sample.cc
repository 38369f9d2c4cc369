/* libime_sample.cc - everyday Chinese phrases sampled from libime's language
 * model (Debian libime-data-language-model: zh_CN.lm, a KenLM n-gram model of
 * modern web Chinese, and zh_CN.lm.predict, its table of at most ~15 likely
 * followers per word; LGPL-2.1+), as training text for the corpus pipeline
 * (scripts/corpus/extract.py libime_lm, issue 15: knowledge from the large
 * n-gram models).
 *
 *   libime_sample LM BYTES SEED      writes about BYTES bytes to stdout
 *
 * One phrase per line, words joined without blanks as Chinese is written:
 *   - its length is drawn uniformly from MIN_WORDS..MAX_WORDS words;
 *   - the first word is drawn from the words that have followers, in
 *     proportion to the model's unigram probability;
 *   - each next word is drawn from the followers of the last word in the
 *     prediction table, in proportion to the model's probability of it
 *     after the whole phrase so far (P(w | phrase) = 10^(score(phrase w) -
 *     score(phrase)), log10 scores from the sentence start), so the table
 *     proposes and the n-gram model decides, as libime's own prediction does;
 *   - a word without followers ends the phrase early; a phrase does not end
 *     on a one-character word (mostly particles and measure words: 的, 一,
 *     个): it goes on up to EXTRA_WORDS more words, and a last one-character
 *     word is dropped.
 * The model has no punctuation and no sentence end (both are unknown words
 * to it), so phrases carry none: a line break ends each. Deterministic for
 * a given model and SEED (splitmix64). Exit status 1 with a message on
 * stderr when the model cannot be read. */
#include <libime/core/datrie.h>
#include <libime/core/languagemodel.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace {

constexpr int MIN_WORDS = 2, MAX_WORDS = 6, EXTRA_WORDS = 3;

uint64_t rng_state;

uint64_t next_u64() {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double uniform() { return (double)(next_u64() >> 11) / 9007199254740992.0; }

/* Index i with probability w[i] / sum(w); w not all zero. */
size_t draw(const std::vector<double> &w) {
    double total = 0;
    for (double x : w) total += x;
    double r = uniform() * total;
    for (size_t i = 0; i < w.size(); i++) {
        if (r < w[i]) return i;
        r -= w[i];
    }
    return w.size() - 1;
}

/* At most 4 bytes: one character of Chinese (a Latin word that short
 * counts too; the table holds few). */
bool short_word(const std::string &w) { return w.size() <= 4; }

struct Table {
    std::vector<std::string> words;
    std::unordered_map<std::string, int> id;
    std::vector<std::vector<int>> followers;   /* by left word's id */

    int intern(const std::string &w) {
        auto it = id.find(w);
        if (it != id.end()) return it->second;
        int n = (int)words.size();
        words.push_back(w);
        followers.emplace_back();
        id.emplace(w, n);
        return n;
    }
};

}  // namespace

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: libime_sample LM BYTES SEED\n");
        return 2;
    }
    long long want = atoll(argv[2]);
    rng_state = strtoull(argv[3], nullptr, 10);
    try {
        auto file = std::make_shared<const libime::StaticLanguageModelFile>(argv[1]);
        libime::LanguageModel lm(file);
        Table t;
        /* keys are "left|right" */
        file->predictionTrie().foreach([&](float, size_t len, libime::DATrie<float>::position_type pos) {
            std::string key;
            file->predictionTrie().suffix(key, len, pos);
            size_t bar = key.find('|');
            if (bar != std::string::npos && bar > 0 && bar + 1 < key.size()) {
                int l = t.intern(key.substr(0, bar)), r = t.intern(key.substr(bar + 1));
                t.followers[l].push_back(r);
            }
            return true;
        });
        std::vector<int> starts;
        std::vector<double> start_w;
        for (size_t i = 0; i < t.words.size(); i++)
            if (!t.followers[i].empty()) {
                starts.push_back((int)i);
                start_w.push_back(pow(10.0, lm.singleWordScore(t.words[i])));
            }
        if (starts.empty()) {
            fprintf(stderr, "libime_sample: %s has no prediction table\n", argv[1]);
            return 1;
        }
        long long written = 0;
        std::vector<std::string_view> phrase;
        std::vector<double> w;
        while (written < want) {
            int n = MIN_WORDS + (int)(next_u64() % (uint64_t)(MAX_WORDS - MIN_WORDS + 1));
            int cur = starts[draw(start_w)];
            phrase.assign(1, t.words[cur]);
            std::string line = t.words[cur];
            /* a phrase does not stop on a one-character word: those are
             * mostly particles and measure words ("的", "一", "个") that
             * only lead into what follows */
            auto dangling = [&] { return short_word(t.words[cur]) && (int)phrase.size() < n + EXTRA_WORDS; };
            while (((int)phrase.size() < n || dangling()) && !t.followers[cur].empty()) {
                float base = lm.wordsScore(lm.beginState(), phrase);
                const std::vector<int> &f = t.followers[cur];
                w.assign(f.size(), 0);
                for (size_t i = 0; i < f.size(); i++) {
                    phrase.push_back(t.words[f[i]]);
                    w[i] = pow(10.0, lm.wordsScore(lm.beginState(), phrase) - base);
                    phrase.pop_back();
                }
                cur = f[draw(w)];
                phrase.push_back(t.words[cur]);
                line += t.words[cur];
            }
            if (short_word(t.words[cur]) && phrase.size() > 1) line.resize(line.size() - t.words[cur].size());
            line += '\n';
            fwrite(line.data(), 1, line.size(), stdout);
            written += (long long)line.size();
        }
        return ferror(stdout) ? 1 : 0;
    } catch (const std::exception &e) {
        fprintf(stderr, "libime_sample: cannot read %s: %s\n", argv[1], e.what());
        return 1;
    }
}
