/* libime_prior.cc - the Chinese next-word prior (src/prior/prior.h) exported
 * from libime's language model (Debian libime-data-language-model: zh_CN.lm,
 * a KenLM n-gram model of modern web Chinese, and zh_CN.lm.predict, its table
 * of at most ~15 likely followers per word; LGPL-2.1+), issue 15: an n-gram
 * model's knowledge interpolated inside the search at run time.
 *
 *   libime_prior LM OUT [MAX_FOLLOWERS]
 *
 * OUT is a safetensors file (the container of st.h) with __metadata__
 * format "laya-prior", format_version "1", source, license, and, in this
 * order (the 4-byte arrays first, so each is aligned in the file):
 *   word_off U32 (NW+1)   word i is words[word_off[i] .. word_off[i+1])
 *   fol_off  U32 (NW+1)   word i's followers are fol[fol_off[i] .. fol_off[i+1])
 *   fol      U32 (NF)     a follower's word id
 *   fol_p    F32 (NF)     P(follower | word) under the n-gram model, the
 *                         followers of a word in decreasing order
 *   words    U8  (NB)     every word's UTF-8 bytes, concatenated, the words
 *                         sorted by their bytes (memcmp order), distinct
 * Words are those of the prediction table (a left or a right word); each
 * keeps its MAX_FOLLOWERS (default 8) most probable followers of more than
 * one character (MAX_SHORT), P(f | w) = 10^(score(w f) - score(w)) from the
 * model's null state (no sentence start: the word may be anywhere in a
 * line). Left words of one byte (ASCII letters and digits the table holds)
 * are left out: the model ranks those itself. Deterministic for a given
 * model. Exit status 1 with a message on
 * stderr when the model cannot be read or OUT cannot be written. */
#include <libime/core/datrie.h>
#include <libime/core/languagemodel.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace {

/* A follower of at most this many bytes (one Chinese character, or a short
 * Latin word) is left out: the search ranks a suggestion by the keystrokes
 * it saves, and a one-character suggestion in Chinese saves none. */
constexpr size_t MAX_SHORT = 4;

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

struct Tensor {
    const char *name, *dtype;
    size_t count, size;   /* elements, bytes per element */
    const void *data;
};

/* The safetensors container: header length, JSON header padded with blanks
 * so the data starts 64-byte aligned (as st.h's writer does), the data. */
bool write_st(const char *path, const std::vector<Tensor> &ts, const std::string &meta) {
    std::string h = "{\"__metadata__\":" + meta;
    size_t at = 0;
    for (const Tensor &t : ts) {
        char buf[256];
        snprintf(buf, sizeof buf, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%zu],\"data_offsets\":[%zu,%zu]}", t.name,
                 t.dtype, t.count, at, at + t.count * t.size);
        h += buf;
        at += t.count * t.size;
    }
    h += "}";
    while ((8 + h.size()) % 64) h += ' ';
    std::string tmp = std::string(path) + ".tmp";
    FILE *f = fopen(tmp.c_str(), "wb");
    if (!f) return false;
    uint64_t n = h.size();
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)(n >> (8 * i));
    bool ok = fwrite(len, 1, 8, f) == 8 && fwrite(h.data(), 1, h.size(), f) == h.size();
    for (const Tensor &t : ts) ok = ok && fwrite(t.data, t.size, t.count, f) == t.count;
    ok = fclose(f) == 0 && ok;
    return ok && rename(tmp.c_str(), path) == 0;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: libime_prior LM OUT [MAX_FOLLOWERS]\n");
        return 2;
    }
    size_t max_fol = argc == 4 ? (size_t)atoi(argv[3]) : 8;
    if (max_fol < 1 || max_fol > 64) {
        fprintf(stderr, "libime_prior: MAX_FOLLOWERS must be 1..64\n");
        return 2;
    }
    try {
        auto file = std::make_shared<const libime::StaticLanguageModelFile>(argv[1]);
        libime::LanguageModel lm(file);
        Table t;
        /* the table's keys are "left|right" */
        file->predictionTrie().foreach([&](float, size_t len, libime::DATrie<float>::position_type pos) {
            std::string key;
            file->predictionTrie().suffix(key, len, pos);
            size_t bar = key.find('|');
            if (bar != std::string::npos && bar > 1 && key.size() - bar - 1 > MAX_SHORT) {
                int l = t.intern(key.substr(0, bar)), r = t.intern(key.substr(bar + 1));
                t.followers[l].push_back(r);
            }
            return true;
        });
        if (t.words.empty()) {
            fprintf(stderr, "libime_prior: %s has no prediction table\n", argv[1]);
            return 1;
        }
        /* the words in byte order; ids are positions in it */
        std::vector<int> order(t.words.size());
        for (size_t i = 0; i < order.size(); i++) order[i] = (int)i;
        std::sort(order.begin(), order.end(), [&](int a, int b) { return t.words[a] < t.words[b]; });
        std::vector<uint32_t> rank(order.size());
        for (size_t i = 0; i < order.size(); i++) rank[order[i]] = (uint32_t)i;
        std::string bytes;
        std::vector<uint32_t> word_off(1, 0), fol_off(1, 0), fol;
        std::vector<float> fol_p;
        std::vector<std::pair<float, uint32_t>> fs;
        for (int w : order) {
            bytes += t.words[w];
            word_off.push_back((uint32_t)bytes.size());
            fs.clear();
            std::vector<std::string_view> ph{t.words[w], ""};
            float base = lm.wordsScore(lm.nullState(), std::vector<std::string_view>{t.words[w]});
            for (int r : t.followers[w]) {
                ph[1] = t.words[r];
                float p = (float)pow(10.0, lm.wordsScore(lm.nullState(), ph) - base);
                if (p > 0 && p <= 1) fs.emplace_back(p, rank[r]);
            }
            /* most probable first; equal ones by id, so the output is fixed */
            std::sort(fs.begin(), fs.end(), [](const std::pair<float, uint32_t> &a, const std::pair<float, uint32_t> &b) {
                return a.first != b.first ? a.first > b.first : a.second < b.second;
            });
            if (fs.size() > max_fol) fs.resize(max_fol);
            for (auto &x : fs) fol.push_back(x.second), fol_p.push_back(x.first);
            fol_off.push_back((uint32_t)fol.size());
        }
        std::string meta = "{\"format\":\"laya-prior\",\"format_version\":\"1\",\"lang\":\"zh\","
                           "\"source\":\"libime-data-language-model zh_CN.lm + zh_CN.lm.predict\","
                           "\"license\":\"LGPL-2.1-or-later\",\"max_followers\":\"" +
                           std::to_string(max_fol) + "\"}";
        /* the 4-byte arrays first, so each is aligned in the file */
        std::vector<Tensor> ts = {{"word_off", "U32", word_off.size(), 4, word_off.data()},
                                  {"fol_off", "U32", fol_off.size(), 4, fol_off.data()},
                                  {"fol", "U32", fol.size(), 4, fol.data()},
                                  {"fol_p", "F32", fol_p.size(), 4, fol_p.data()},
                                  {"words", "U8", bytes.size(), 1, bytes.data()}};
        if (!write_st(argv[2], ts, meta)) {
            fprintf(stderr, "libime_prior: cannot write %s\n", argv[2]);
            return 1;
        }
        fprintf(stderr, "libime_prior: %zu words, %zu followers, %zu bytes of words\n", order.size(), fol.size(),
                bytes.size());
        return 0;
    } catch (const std::exception &e) {
        fprintf(stderr, "libime_prior: cannot read %s: %s\n", argv[1], e.what());
        return 1;
    }
}
