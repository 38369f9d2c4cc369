/* fcx_text.h - what the fcitx5 addon knows of the text before the cursor in
 * one input context, and the context it gives the library (the text of a
 * LAYA_INPUT_CONTEXT event).
 *
 * Two sources, best first:
 *  - the client's surrounding text, where the client offers it: the text
 *    before the cursor (before the selection, which a typed key replaces).
 *    A client reports it before each key (GTK's module does), so while a key
 *    is handled it lags by what that key did: the text an engine committed,
 *    a character the key typed straight into the client, a character a
 *    Backspace deleted. Those edits are kept as pending and applied on top
 *    until the next key arrives, or until a surrounding-text update shows the
 *    pending text already there.
 *  - else our own record: what was committed and typed into the client since
 *    the last focus change, reset or cursor movement.
 *
 * The record and the pending text are capped (RECORD_MAX bytes; the record is
 * trimmed to half on a character boundary). The context is cut to at most
 * CONTEXT_MAX bytes from a start that stays put while the user types (a
 * multiple of CONTEXT_STEP bytes, moved forward to a character boundary): the
 * session diffs each context against the previous one, and a start that moved
 * with every key would rewind it to its first checkpoint each time.
 * Text lives only in memory here; nothing is logged or written. */
#ifndef LAYA_FCX_TEXT_H
#define LAYA_FCX_TEXT_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace laya_fcitx {

class TextBefore {
public:
    static constexpr size_t RECORD_MAX = 4096, CONTEXT_MAX = 2048, CONTEXT_STEP = 1024;

    /* Text committed to the client, by any engine or by us. */
    void commit(std::string_view s);
    /* A key passed straight to the client types code point c. */
    void typed(uint32_t c);
    /* A Backspace passed to the client deletes one character. */
    void backspace();
    /* The cursor may be anywhere now (focus change, reset, a key whose effect
     * we cannot follow): forget the record and the pending edits. */
    void forget();
    /* The client sent a new surrounding text; `before` is its part before the
     * cursor. Pending text it already ends with is taken as applied. */
    void surrounding(std::string_view before);
    /* A key arrived: the client's surrounding text is as of now. */
    void key_arrived();

    /* The context for the model: `before` with the pending edits applied when
     * have_surrounding, else the record; cut as above. */
    std::string context(bool have_surrounding, std::string_view before) const;

    bool empty_record() const { return record_.empty(); }

private:
    std::string record_, pending_;
    size_t deleted_ = 0;   /* characters deleted before pending_ was typed */
};

/* The part of text before min(cursor, anchor), both counted in characters as
 * fcitx5 counts them; all of text when the offset is past its end. */
std::string text_before(const std::string &text, unsigned cursor, unsigned anchor);

/* Code point c in UTF-8 (empty past U+10FFFF). */
std::string utf8_of(uint32_t c);
/* Characters in the last `bytes` bytes of s (all of s when it is shorter),
 * as fcitx5 counts them for deleteSurroundingText. */
unsigned chars_in_tail(std::string_view s, size_t bytes);
/* s without its last character (unchanged when empty). */
void erase_last_char(std::string &s);

}  // namespace laya_fcitx
#endif
