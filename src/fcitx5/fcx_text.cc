/* fcx_text.cc - the text before the cursor (contract in fcx_text.h). */
#include "fcitx5/fcx_text.h"

namespace laya_fcitx {

namespace {

bool continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

/* Bytes of s without its last n characters (a lone continuation byte run
 * counts with the lead before it, as a decoder would take it). */
size_t drop_chars(std::string_view s, size_t n) {
    size_t len = s.size();
    while (n-- && len) {
        len--;
        while (len && continuation(static_cast<unsigned char>(s[len]))) len--;
    }
    return len;
}

/* The first character boundary at or after byte i. */
size_t boundary_from(std::string_view s, size_t i) {
    while (i < s.size() && continuation(static_cast<unsigned char>(s[i]))) i++;
    return i;
}

void cap_tail(std::string &s, size_t max, size_t keep) {
    if (s.size() <= max) return;
    s.erase(0, boundary_from(s, s.size() - keep));
}

}  // namespace

void TextBefore::commit(std::string_view s) {
    record_ += s;
    pending_ += s;
    cap_tail(record_, RECORD_MAX, RECORD_MAX / 2);
    cap_tail(pending_, RECORD_MAX, RECORD_MAX);
}

void TextBefore::typed(uint32_t c) { commit(utf8_of(c)); }

void TextBefore::backspace() {
    record_.resize(drop_chars(record_, 1));
    if (!pending_.empty()) pending_.resize(drop_chars(pending_, 1));
    else deleted_++;
}

void TextBefore::forget() {
    record_.clear();
    pending_.clear();
    deleted_ = 0;
}

void TextBefore::surrounding(std::string_view before) {
    if (deleted_ == 0 && !pending_.empty() && before.size() >= pending_.size() &&
        before.substr(before.size() - pending_.size()) == pending_)
        pending_.clear();
}

void TextBefore::key_arrived() {
    pending_.clear();
    deleted_ = 0;
}

std::string TextBefore::context(bool have_surrounding, std::string_view before) const {
    std::string ctx;
    if (have_surrounding) {
        ctx.assign(before.substr(0, drop_chars(before, deleted_)));
        ctx += pending_;
    } else {
        ctx = record_;
    }
    if (ctx.size() > CONTEXT_MAX) {
        size_t start = ((ctx.size() - CONTEXT_MAX) / CONTEXT_STEP + 1) * CONTEXT_STEP;
        ctx.erase(0, boundary_from(ctx, start));
    }
    return ctx;
}

std::string text_before(const std::string &text, unsigned cursor, unsigned anchor) {
    unsigned at = cursor < anchor ? cursor : anchor;
    size_t i = 0;
    for (unsigned n = 0; n < at && i < text.size(); n++) i = boundary_from(text, i + 1);
    return text.substr(0, i);
}

std::string utf8_of(uint32_t c) {
    std::string o;
    if (c < 0x80) {
        o += static_cast<char>(c);
    } else if (c < 0x800) {
        o += static_cast<char>(0xC0 | (c >> 6));
        o += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        o += static_cast<char>(0xE0 | (c >> 12));
        o += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        o += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x110000) {
        o += static_cast<char>(0xF0 | (c >> 18));
        o += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
        o += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        o += static_cast<char>(0x80 | (c & 0x3F));
    }
    return o;
}

unsigned chars_in_tail(std::string_view s, size_t bytes) {
    unsigned n = 0;
    for (size_t i = s.size() > bytes ? boundary_from(s, s.size() - bytes) : 0; i < s.size(); i = boundary_from(s, i + 1)) n++;
    return n;
}

void erase_last_char(std::string &s) { s.resize(drop_chars(s, 1)); }

}  // namespace laya_fcitx
