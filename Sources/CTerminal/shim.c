#define _XOPEN_SOURCE_EXTENDED 1
#define NCURSES_WIDECHAR 1
#include "CTerminal.h"

#include <locale.h>
#include <poll.h>
#include <ncursesw/curses.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

static volatile sig_atomic_t cterm_active = 0;
static volatile sig_atomic_t cterm_stop_flag = 0;
static attr_t cterm_attrs[CTERM_ROLE_COUNT];
static short cterm_pairs[CTERM_ROLE_COUNT];

static void cterm_restore_and_reraise(int sig) {
    // Best effort: the terminal must not be left raw and blank behind a crash.
    if (cterm_active) {
        cterm_active = 0;
        endwin();
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void cterm_request_stop(int sig) {
    (void)sig;
    cterm_stop_flag = 1;
}

static void cterm_at_exit(void) { cterm_stop(); }

static void cterm_roles(void) {
    memset(cterm_attrs, 0, sizeof cterm_attrs);
    memset(cterm_pairs, 0, sizeof cterm_pairs);
    cterm_attrs[CTERM_ROLE_BAR] = A_REVERSE;
    cterm_attrs[CTERM_ROLE_FOCUS] = A_REVERSE | A_BOLD;
    cterm_attrs[CTERM_ROLE_DISABLED] = A_DIM;
    cterm_attrs[CTERM_ROLE_ERROR] = A_BOLD;
    cterm_attrs[CTERM_ROLE_ACCENT] = A_BOLD;
    cterm_attrs[CTERM_ROLE_MUTED] = A_DIM;
    cterm_attrs[CTERM_ROLE_SELECTED] = A_UNDERLINE | A_BOLD;
    cterm_attrs[CTERM_ROLE_TITLE] = A_BOLD;
    if (!has_colors()) return;
    start_color();
    use_default_colors();
    init_pair(1, COLOR_WHITE, COLOR_BLUE);
    init_pair(2, COLOR_BLACK, COLOR_CYAN);
    init_pair(3, COLOR_WHITE, COLOR_RED);
    init_pair(4, COLOR_GREEN, -1);
    init_pair(5, COLOR_YELLOW, -1);
    cterm_pairs[CTERM_ROLE_BAR] = 1;
    cterm_attrs[CTERM_ROLE_BAR] = A_BOLD;
    cterm_pairs[CTERM_ROLE_FOCUS] = 2;
    cterm_attrs[CTERM_ROLE_FOCUS] = A_BOLD;
    cterm_pairs[CTERM_ROLE_ERROR] = 3;
    cterm_pairs[CTERM_ROLE_ACCENT] = 4;
    cterm_pairs[CTERM_ROLE_SELECTED] = 5;
}

int cterm_start(void) {
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) return -1;
    setlocale(LC_ALL, "");
    if (initscr() == NULL) return -1;
    cterm_active = 1;
    atexit(cterm_at_exit);
    int crashes[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP};
    for (size_t i = 0; i < sizeof crashes / sizeof crashes[0]; i++) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_handler = cterm_restore_and_reraise;
        action.sa_flags = SA_RESETHAND;
        sigaction(crashes[i], &action, NULL);
    }
    int stops[] = {SIGTERM, SIGHUP, SIGINT};
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_handler = cterm_request_stop;
        sigaction(stops[i], &action, NULL);
    }
    raw();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    set_escdelay(25);
    curs_set(0);
    cterm_roles();
    return 0;
}

void cterm_stop(void) {
    if (!cterm_active) return;
    cterm_active = 0;
    curs_set(1);
    endwin();
}

void cterm_size(int *rows, int *cols) {
    int r, c;
    getmaxyx(stdscr, r, c);
    *rows = r;
    *cols = c;
}

int cterm_read_key(int timeout_ms, uint32_t *character) {
    wint_t key = 0;
    *character = 0;
    // A terminal that went away (its tmux or ssh gone) makes every read fail at once: say so
    // rather than let the caller spin.
    struct pollfd input = {.fd = STDIN_FILENO, .events = POLLIN, .revents = 0};
    int ready = poll(&input, 1, timeout_ms);
    if (ready < 0) return CTERM_KEY_NONE;
    if (input.revents & (POLLHUP | POLLERR | POLLNVAL)) return CTERM_KEY_HANGUP;
    if (ready == 0) {
        // ncurses may still hold a key it read earlier (the rest of an escape sequence).
        timeout(0);
    } else {
        timeout(timeout_ms);
    }
    int kind = get_wch(&key);
    if (kind == ERR) return CTERM_KEY_NONE;
    if (kind == OK) {
        if (key == '\r' || key == '\n') return CTERM_KEY_ENTER;
        if (key == 127 || key == 8) return CTERM_KEY_BACKSPACE;
        *character = (uint32_t)key;
        return CTERM_KEY_CHAR;
    }
    switch (key) {
    case KEY_UP: return CTERM_KEY_UP;
    case KEY_DOWN: return CTERM_KEY_DOWN;
    case KEY_LEFT: return CTERM_KEY_LEFT;
    case KEY_RIGHT: return CTERM_KEY_RIGHT;
    case KEY_BACKSPACE: return CTERM_KEY_BACKSPACE;
    case KEY_DC: return CTERM_KEY_DELETE;
    case KEY_ENTER: return CTERM_KEY_ENTER;
    case KEY_BTAB: return CTERM_KEY_BACKTAB;
    case KEY_HOME: return CTERM_KEY_HOME;
    case KEY_END: return CTERM_KEY_END;
    case KEY_PPAGE: return CTERM_KEY_PAGE_UP;
    case KEY_NPAGE: return CTERM_KEY_PAGE_DOWN;
    case KEY_RESIZE: return CTERM_KEY_RESIZE;
    case KEY_F(1): return CTERM_KEY_F1;
    case KEY_F(2): return CTERM_KEY_F2;
    default: return CTERM_KEY_OTHER;
    }
}

void cterm_put(int row, int col, const uint32_t *scalars, int count, int role) {
    int rows, cols;
    getmaxyx(stdscr, rows, cols);
    if (row < 0 || row >= rows || col >= cols || count <= 0) return;
    if (col + count > cols) count = cols - col;
    if (role < 0 || role >= CTERM_ROLE_COUNT) role = CTERM_ROLE_NORMAL;
    wchar_t buffer[512];
    while (count > 0) {
        int n = count > 511 ? 511 : count;
        for (int i = 0; i < n; i++) buffer[i] = (wchar_t)scalars[i];
        buffer[n] = 0;
        attr_set(cterm_attrs[role], cterm_pairs[role], NULL);
        mvaddnwstr(row, col, buffer, n);
        attr_set(A_NORMAL, 0, NULL);
        scalars += n;
        col += n;
        count -= n;
    }
}

void cterm_begin_frame(void) { erase(); }

void cterm_end_frame(void) {
    wnoutrefresh(stdscr);
    doupdate();
}

int cterm_stop_requested(void) { return cterm_stop_flag; }
