// A tiny shim over ncursesw: only what the terminal client needs, with no curses type or macro
// in its signatures, so Swift never sees ncurses itself. Every function is prefixed `cterm_`.
#ifndef CTERMINAL_H
#define CTERMINAL_H

#include <stdint.h>

// Keys that are not characters, as cterm_read_key reports them.
enum {
    CTERM_KEY_NONE = 0,
    CTERM_KEY_CHAR = 1,     // *character holds a Unicode scalar (control characters included)
    CTERM_KEY_UP = 2,
    CTERM_KEY_DOWN,
    CTERM_KEY_LEFT,
    CTERM_KEY_RIGHT,
    CTERM_KEY_BACKSPACE,
    CTERM_KEY_DELETE,
    CTERM_KEY_ENTER,
    CTERM_KEY_BACKTAB,
    CTERM_KEY_HOME,
    CTERM_KEY_END,
    CTERM_KEY_PAGE_UP,
    CTERM_KEY_PAGE_DOWN,
    CTERM_KEY_RESIZE,
    CTERM_KEY_F1,
    CTERM_KEY_F2,
    CTERM_KEY_OTHER,
    CTERM_KEY_HANGUP,       // the terminal is gone: stop
};

// Roles a cell is drawn in; the shim maps each to colours and attributes.
enum {
    CTERM_ROLE_NORMAL = 0,
    CTERM_ROLE_BAR,
    CTERM_ROLE_FOCUS,
    CTERM_ROLE_DISABLED,
    CTERM_ROLE_ERROR,
    CTERM_ROLE_ACCENT,
    CTERM_ROLE_MUTED,
    CTERM_ROLE_SELECTED,
    CTERM_ROLE_TITLE,
    CTERM_ROLE_COUNT,
};

// Takes over the terminal: locale, raw keys, no echo, keypad, hidden cursor, colours when the
// terminal has them. Also restores the terminal when the process crashes (SIGSEGV, SIGBUS,
// SIGILL, SIGFPE, SIGABRT, SIGTRAP) or exits. Returns 0, or -1 when stdin/stdout is no terminal.
int cterm_start(void);
// Gives the terminal back; safe to call twice.
void cterm_stop(void);
// The terminal's size now.
void cterm_size(int *rows, int *cols);
// Waits up to timeout_ms for a key; returns a CTERM_KEY_* value.
int cterm_read_key(int timeout_ms, uint32_t *character);
// Draws `count` Unicode scalars at (row, col) in `role`, clipped to the screen.
void cterm_put(int row, int col, const uint32_t *scalars, int count, int role);
// Starts a frame (clears the virtual screen) and shows it (ncurses sends only what changed).
void cterm_begin_frame(void);
void cterm_end_frame(void);
// Set by SIGTERM, SIGHUP or SIGINT after cterm_start: the caller should leave cleanly.
int cterm_stop_requested(void);

#endif
