/* Optional native inner loops of the offset planner (compiler/memory/planner.py).
 *
 * Each function is the exact counterpart of a pure-Python one in planner.py (which stays the fallback when
 * this extension is not built; tests/compiler/test_planner_native.py checks both give the same plans byte for byte):
 *
 *   overlaps(items, first, last, n) -> (indptr, indices)   like planner._overlaps (neighbour lists, CSR; each
 *                                                          list in sweep order, not sorted: no loop needs it)
 *   place(order, size, align, indptr, indices, off, base, best_fit, limit, static) -> height
 *                                                          like planner._place_py (first / best fit)
 *   place_dense(order, items, first, last, size, align, off, base, best_fit, limit) -> height
 *                                                          the same without neighbour lists (dense inputs)
 *   peak(first, last, size) -> int                         like planner._peak (the lower bound)
 *   count_pairs(items, first, last) -> int                 like planner._count_pairs
 *   sweep(order, first, last, size, align, off, base, best_fit) -> height   like planner._sweep_py
 *   sort_items(items, ((column, descending), ...)) -> items   like sorted() by planner._sweep_keys / _order_keys
 *   components(items, first, last) -> (grouped, ends, spanning, span_ends)   like planner._groups
 *   ingest(first, last, size, align) -> (4 arrays, bounds...) or None   planner._Arrays' arrays and checks
 *   offsets_dict(ids, off) -> dict                         the plan's offsets by id (sized once)
 *   exact_search(arrays, capacity, heuristic) -> capsule   planner._Search's whole depth-first search, paused
 *   exact_resume(capsule, pause_at) -> (status, nodes, work, solution)   ... run on to its next pause or end
 *   start_order(by_start, off, first, last, size, leaves) -> (first, last, size, off, tops tree, lasts tree)
 *                                                          like planner._StartOrder's lists
 *   window(tree, first, last, off, size, inside, end, lo, hi) -> (movers, partial, spans)
 *                                                          like planner._StartOrder.window's members
 *   split_place(short, long, first, last, size, align, off, base, best_fit) -> height
 *                                                          the short-lived phase of planner._split_sweep
 *   live_max(items, first, last, size) -> array            like planner._live_max
 *   quick(items, first, last, size, align, off, lb, dense) -> (k, offsets) or None
 *                                                          planner._quick's orders (size, area, conflict-size;
 *                                                          first fit, stopping above lb) in one call: the first
 *                                                          order k reaching lb and its offsets
 *   derive(kind, a, b, n) -> array                         a derived key column of planner._Orders._column
 *   fields(objects, names) -> (list, ...)                  [getattr(o, name) for o in objects], a list a name
 *
 * Every array is an int64 buffer (array.array('q')); ``off`` is written in place. The caller guarantees that
 * every value and every offset reached fits in int64 (planner._Arrays.native).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SIGN_BIT 0x8000000000000000ull /* xor'd into an int64, puts it in unsigned order */

typedef struct {
    int64_t lo, hi;
} range_t;

/* Sort obstacles by their start: ties need no order, as lowest_fit gives the same offset for any order of
 * obstacles starting at the same byte. Quicksort (median of three) with insertion sort for short runs. */
static void sort_ranges(range_t *a, Py_ssize_t n) {
    while (n > 16) {
        Py_ssize_t mid = n / 2;
        int64_t x = a[0].lo, y = a[mid].lo, z = a[n - 1].lo;
        int64_t pivot = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
        Py_ssize_t i = 0, j = n - 1;
        while (i <= j) {
            while (a[i].lo < pivot) i++;
            while (a[j].lo > pivot) j--;
            if (i <= j) {
                range_t t = a[i];
                a[i] = a[j];
                a[j] = t;
                i++;
                j--;
            }
        }
        /* recurse into the smaller side, loop on the larger: stack depth stays logarithmic */
        if (j + 1 < n - i) {
            sort_ranges(a, j + 1);
            a += i;
            n -= i;
        } else {
            sort_ranges(a + i, n - i);
            n = j + 1;
        }
    }
    for (Py_ssize_t i = 1; i < n; i++) {
        range_t t = a[i];
        Py_ssize_t j = i;
        while (j > 0 && a[j - 1].lo > t.lo) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = t;
    }
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

typedef struct {
    int64_t first, item;
} start_t;

static inline int start_less(const start_t *x, const start_t *y) {
    return x->first < y->first || (x->first == y->first && x->item < y->item);
}

/* NAME(a, tmp, n): sort n values of TYPE ascending by LESS (a strict order; tmp: scratch of n): insertion sort of
 * runs of 16, merged bottom-up (stable; faster than qsort's calls through a pointer on short arrays). */
#define DEFINE_MERGE_SORT(NAME, TYPE, LESS)                                                                      \
    static void NAME(TYPE *a, TYPE *tmp, Py_ssize_t n) {                                                       \
        enum { RUN = 16 };                                                                                     \
        for (Py_ssize_t lo = 0; lo < n; lo += RUN) {                                                           \
            Py_ssize_t hi = lo + RUN < n ? lo + RUN : n;                                                       \
            for (Py_ssize_t i = lo + 1; i < hi; i++) {                                                         \
                TYPE t = a[i];                                                                                 \
                Py_ssize_t j = i;                                                                              \
                while (j > lo && LESS(&t, &a[j - 1])) {                                                        \
                    a[j] = a[j - 1];                                                                           \
                    j--;                                                                                       \
                }                                                                                              \
                a[j] = t;                                                                                      \
            }                                                                                                  \
        }                                                                                                      \
        TYPE *src = a, *dst = tmp;                                                                             \
        for (Py_ssize_t w = RUN; w < n; w *= 2) {                                                              \
            for (Py_ssize_t lo = 0; lo < n; lo += 2 * w) {                                                     \
                Py_ssize_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;                \
                Py_ssize_t i = lo, j = mid, o = lo;                                                            \
                while (i < mid && j < hi) dst[o++] = LESS(&src[j], &src[i]) ? src[j++] : src[i++];             \
                while (i < mid) dst[o++] = src[i++];                                                           \
                while (j < hi) dst[o++] = src[j++];                                                            \
            }                                                                                                  \
            TYPE *t = src;                                                                                     \
            src = dst;                                                                                         \
            dst = t;                                                                                           \
        }                                                                                                      \
        if (src != a) memcpy(a, src, sizeof(TYPE) * (size_t)n);                                                \
    }

DEFINE_MERGE_SORT(sort_starts, start_t, start_less)

static inline int64_t align_up(int64_t v, int64_t a) {
    if (a == 1) return v;
    int64_t r = v % a;
    if (r < 0) r += a;
    return r ? v + (a - r) : v;
}

/* planner._lowest_fit over the merge of two sorted obstacle lists (a buffer's neighbours and the static ranges),
 * walked lazily: first fit usually stops long before the end of the static ones. */
/* One obstacle [lo, hi) of planner._lowest_fit's walk (obstacles by start): note the gap below it (best fit) and
 * lift the candidate above it; 1 when first fit stops there (s bytes fit below it). */
static inline int fit_step(int64_t lo, int64_t hi, int64_t s, int64_t a, int best_fit, int64_t *cand, int64_t *best,
                           int64_t *best_gap) {
    if (lo >= *cand + s) {
        if (!best_fit) return 1;
        if (*best < 0 || lo - *cand < *best_gap) {
            *best = *cand;
            *best_gap = lo - *cand;
        }
    }
    if (hi > *cand) *cand = align_up(hi, a);
    return 0;
}

static int64_t lowest_fit(const range_t *x, Py_ssize_t nx, const range_t *y, Py_ssize_t ny, int64_t s, int64_t a,
                          int64_t base, int best_fit) {
    int64_t cand = align_up(base, a), best = -1, best_gap = 0;
    Py_ssize_t i = 0, j = 0;
    while (i < nx || j < ny) {
        const range_t *o = (j >= ny || (i < nx && x[i].lo <= y[j].lo)) ? &x[i++] : &y[j++];
        if (fit_step(o->lo, o->hi, s, a, best_fit, &cand, &best, &best_gap)) break;
    }
    return best_fit && best >= 0 ? best : cand;
}

/* Borrow an int64 buffer (format 'q' or 'l' of 8 bytes). */
static int get_i64(PyObject *obj, Py_buffer *view, int writable, const char *what) {
    if (PyObject_GetBuffer(obj, view, (writable ? PyBUF_WRITABLE : 0) | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->itemsize != 8 || view->format == NULL || (strcmp(view->format, "q") && strcmp(view->format, "l"))) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_TypeError, "%s: expected an int64 buffer", what);
        return -1;
    }
    return 0;
}

/* Borrow every buffer of objs (the one at index writable, if any, writable); return how many were borrowed
 * (fewer than n after an error, the exception set). */
static int get_all(PyObject **objs, Py_buffer *v, int n, const char **names, int writable) {
    int got = 0;
    for (; got < n; got++)
        if (get_i64(objs[got], &v[got], got == writable, names[got]) < 0) break;
    return got;
}

/* 0 if every one of the m items is in [0, n), else -1 with IndexError "<who>: item out of range". */
static int check_items(const int64_t *items, Py_ssize_t m, Py_ssize_t n, const char *who) {
    for (Py_ssize_t k = 0; k < m; k++)
        if (items[k] < 0 || items[k] >= n) {
            PyErr_Format(PyExc_IndexError, "%s: item out of range", who);
            return -1;
        }
    return 0;
}

/* planner._place_py's loop over neighbour lists (CSR over n buffers), the ``fixed`` ranges (sorted) occupied for
 * every buffer; ``obs`` has room for the longest list. Stops once the height reaches ``limit`` (if >= 0). */
static int64_t place_lists(const int64_t *order, Py_ssize_t n_order, const int64_t *size, const int64_t *align,
                           const int64_t *indptr, const int64_t *indices, Py_ssize_t n, int64_t *off, range_t *obs,
                           const range_t *fixed, Py_ssize_t n_static, int64_t base, int best_fit, int64_t limit) {
    int64_t height = base;
    for (Py_ssize_t k = 0; k < n_order; k++) {
        int64_t b = order[k];
        Py_ssize_t m = 0;
        for (int64_t e = indptr[b]; e < indptr[b + 1]; e++) {
            int64_t o = indices[e];
            if (o >= 0 && o < n && off[o] >= 0) {
                obs[m].lo = off[o];
                obs[m].hi = off[o] + size[o];
                m++;
            }
        }
        sort_ranges(obs, m);
        int64_t cand = lowest_fit(obs, m, fixed, n_static, size[b], align[b], base, best_fit);
        off[b] = cand;
        if (cand + size[b] > height) {
            height = cand + size[b];
            if (limit >= 0 && height >= limit) break;
        }
    }
    return height;
}

static PyObject *native_place(PyObject *self, PyObject *args) {
    PyObject *o_order, *o_size, *o_align, *o_indptr, *o_indices, *o_off, *o_static;
    long long base, limit;
    int best_fit;
    if (!PyArg_ParseTuple(args, "OOOOOOLpLO", &o_order, &o_size, &o_align, &o_indptr, &o_indices, &o_off, &base,
                          &best_fit, &limit, &o_static))
        return NULL;
    Py_buffer v[7];
    PyObject *objs[7] = {o_order, o_size, o_align, o_indptr, o_indices, o_off, o_static};
    const char *names[7] = {"order", "size", "align", "indptr", "indices", "off", "static"};
    int got = get_all(objs, v, 7, names, 5);
    PyObject *result = NULL;
    range_t *obs = NULL;
    if (got < 7) goto done;
    const int64_t *order = v[0].buf, *size = v[1].buf, *align = v[2].buf, *indptr = v[3].buf, *indices = v[4].buf;
    int64_t *off = v[5].buf;
    const int64_t *stat = v[6].buf;
    Py_ssize_t n_order = v[0].len / 8, n = v[1].len / 8, n_static = v[6].len / 16;
    if (v[2].len / 8 != n || v[5].len / 8 != n || v[3].len / 8 != n + 1) {
        PyErr_SetString(PyExc_ValueError, "place: arrays of different lengths");
        goto done;
    }
    Py_ssize_t cap = 16, n_ind = v[4].len / 8;
    for (Py_ssize_t k = 0; k < n_order; k++) {
        int64_t b = order[k];
        if (b < 0 || b >= n || indptr[b] < 0 || indptr[b + 1] > n_ind || indptr[b + 1] < indptr[b]) {
            PyErr_SetString(PyExc_IndexError, "place: item out of range");
            goto done;
        }
        if (indptr[b + 1] - indptr[b] > cap) cap = indptr[b + 1] - indptr[b];
    }
    /* the static ranges (sorted once) after room for the neighbours */
    obs = (range_t *)malloc(sizeof(range_t) * (size_t)(cap + n_static));
    if (!obs) {
        PyErr_NoMemory();
        goto done;
    }
    range_t *fixed = obs + cap;
    for (Py_ssize_t e = 0; e < n_static; e++) {
        fixed[e].lo = stat[2 * e];
        fixed[e].hi = stat[2 * e + 1];
    }
    sort_ranges(fixed, n_static);
    int64_t height;
    Py_BEGIN_ALLOW_THREADS;
    height = place_lists(order, n_order, size, align, indptr, indices, n, off, obs, fixed, n_static, base, best_fit,
                         limit);
    Py_END_ALLOW_THREADS;
    result = PyLong_FromLongLong(height);
done:
    free(obs);
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    return result;
}

typedef struct {
    int64_t lo, hi, first, last;
} placed_t;

/* Insert t into pl[0..*np) (ascending by offset; after those at the same offset). */
static inline void placed_insert(placed_t *pl, Py_ssize_t *np, placed_t t) {
    Py_ssize_t j = (*np)++;
    while (j > 0 && pl[j - 1].lo > t.lo) {
        pl[j] = pl[j - 1];
        j--;
    }
    pl[j] = t;
}

/* place_dense's loop: ``pl`` holds the np buffers placed so far by offset (room for n_order more). */
static int64_t place_scan(const int64_t *order, Py_ssize_t n_order, const int64_t *first, const int64_t *last,
                          const int64_t *size, const int64_t *align, int64_t *off, placed_t *pl, Py_ssize_t np,
                          int64_t base, int best_fit, int64_t limit) {
    int64_t height = base;
    for (Py_ssize_t k = 0; k < n_order; k++) {
        int64_t b = order[k], s = size[b], a = align[b], f = first[b], l = last[b];
        int64_t cand = align_up(base, a), best = -1, best_gap = 0;
        for (Py_ssize_t q = 0; q < np; q++) {
            const placed_t *o = &pl[q];
            if (o->last < f || o->first > l) continue;
            if (fit_step(o->lo, o->hi, s, a, best_fit, &cand, &best, &best_gap)) break;
        }
        int64_t x = best_fit && best >= 0 ? best : cand;
        off[b] = x;
        placed_insert(pl, &np, (placed_t){x, x + s, f, l});
        if (x + s > height) {
            height = x + s;
            if (limit >= 0 && height >= limit) break;
        }
    }
    return height;
}

/* planner._place without neighbour lists, for dense inputs: every placed item of ``items`` is kept in one
 * array ascending by offset, and each buffer scans it, skipping those not live with it. The obstacles seen are
 * those _place sees (the items of ``items`` placed and overlapping in time), in offset order. */
static PyObject *native_place_dense(PyObject *self, PyObject *args) {
    PyObject *objs[7];
    long long base, limit;
    int best_fit;
    if (!PyArg_ParseTuple(args, "OOOOOOOLpL", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6],
                          &base, &best_fit, &limit))
        return NULL;
    Py_buffer v[7];
    const char *names[7] = {"order", "items", "first", "last", "size", "align", "off"};
    int got = get_all(objs, v, 7, names, 6);
    PyObject *result = NULL;
    placed_t *pl = NULL;
    if (got < 7) goto done;
    const int64_t *order = v[0].buf, *items = v[1].buf, *first = v[2].buf, *last = v[3].buf, *size = v[4].buf;
    const int64_t *align = v[5].buf;
    int64_t *off = v[6].buf;
    Py_ssize_t n_order = v[0].len / 8, n_items = v[1].len / 8, n = v[2].len / 8;
    if (v[3].len / 8 != n || v[4].len / 8 != n || v[5].len / 8 != n || v[6].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "place_dense: arrays of different lengths");
        goto done;
    }
    if (check_items(items, n_items, n, "place_dense") < 0) goto done;
    if (check_items(order, n_order, n, "place_dense") < 0) goto done;
    pl = (placed_t *)malloc(sizeof(placed_t) * (size_t)(n_items + n_order + 1));
    if (!pl) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t np = 0;
    for (Py_ssize_t k = 0; k < n_items; k++) {
        int64_t i = items[k];
        if (off[i] >= 0) placed_insert(pl, &np, (placed_t){off[i], off[i] + size[i], first[i], last[i]});
    }
    int64_t height;
    Py_BEGIN_ALLOW_THREADS;
    height = place_scan(order, n_order, first, last, size, align, off, pl, np, base, best_fit, limit);
    Py_END_ALLOW_THREADS;
    result = PyLong_FromLongLong(height);
done:
    free(pl);
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    return result;
}

static PyObject *new_i64_array(Py_ssize_t n, int64_t **data) {
    /* array.array('q', [0]) * n: a repeat, cheaper than calling the type with a zeroed bytes object */
    static PyObject *zero = NULL;
    if (!zero) {
        PyObject *mod = PyImport_ImportModule("array");
        if (!mod) return NULL;
        zero = PyObject_CallMethod(mod, "array", "s[i]", "q", 0);
        Py_DECREF(mod);
        if (!zero) return NULL;
    }
    PyObject *arr = PySequence_Repeat(zero, n);
    if (!arr) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(arr, &view, PyBUF_WRITABLE) < 0) {
        Py_DECREF(arr);
        return NULL;
    }
    *data = view.buf; /* array's storage does not move while its size does not change */
    PyBuffer_Release(&view);
    return arr;
}

/* The time-overlapping pairs (i, j) among the m items, by a sweep in (first, item) order keeping the live ones,
 * into *pairs (malloc'd: the caller frees it, also on failure); their number, or -1 (MemoryError set). */
static Py_ssize_t overlap_pairs(const int64_t *items, Py_ssize_t m, const int64_t *first, const int64_t *last,
                                int64_t **pairs_out) {
    start_t *starts = (start_t *)malloc(sizeof(start_t) * (size_t)(2 * m + 1));
    int64_t *live = (int64_t *)malloc(sizeof(int64_t) * (size_t)(m + 1));
    Py_ssize_t npairs = 0, cap = 64 + m;
    int64_t *pairs = *pairs_out = (int64_t *)malloc(sizeof(int64_t) * 2 * (size_t)cap);
    if (!starts || !live || !pairs) goto fail;
    for (Py_ssize_t k = 0; k < m; k++) {
        starts[k].first = first[items[k]];
        starts[k].item = items[k];
    }
    sort_starts(starts, starts + m, m);
    Py_ssize_t nlive = 0;
    for (Py_ssize_t k = 0; k < m; k++) {
        int64_t i = starts[k].item, f = starts[k].first;
        Py_ssize_t keep = 0;
        for (Py_ssize_t q = 0; q < nlive; q++) {
            int64_t j = live[q];
            if (last[j] < f) continue;
            live[keep++] = j;
            if (npairs == cap) {
                cap *= 2;
                int64_t *grown = (int64_t *)realloc(pairs, sizeof(int64_t) * 2 * (size_t)cap);
                if (!grown) goto fail;
                pairs = *pairs_out = grown;
            }
            pairs[2 * npairs] = i;
            pairs[2 * npairs + 1] = j;
            npairs++;
        }
        nlive = keep;
        live[nlive++] = i;
    }
    free(starts);
    free(live);
    return npairs;
fail:
    free(starts);
    free(live);
    PyErr_NoMemory();
    return -1;
}

/* The neighbour lists of ``pairs`` in CSR form over n buffers: ptr (n + 1, zeroed) and ind (2 * npairs). */
static int fill_csr(const int64_t *pairs, Py_ssize_t npairs, Py_ssize_t n, int64_t *ptr, int64_t *ind) {
    for (Py_ssize_t p = 0; p < npairs; p++) {
        ptr[pairs[2 * p] + 1]++;
        ptr[pairs[2 * p + 1] + 1]++;
    }
    for (Py_ssize_t k = 0; k < n; k++) ptr[k + 1] += ptr[k];
    int64_t *fill = (int64_t *)malloc(sizeof(int64_t) * (size_t)(n + 1));
    if (!fill) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(fill, ptr, sizeof(int64_t) * (size_t)(n + 1));
    for (Py_ssize_t p = 0; p < npairs; p++) {
        int64_t i = pairs[2 * p], j = pairs[2 * p + 1];
        ind[fill[i]++] = j;
        ind[fill[j]++] = i;
    }
    free(fill);
    return 0;
}

static PyObject *native_overlaps(PyObject *self, PyObject *args) {
    PyObject *o_items, *o_first, *o_last;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "OOOn", &o_items, &o_first, &o_last, &n)) return NULL;
    Py_buffer v[3];
    PyObject *objs[3] = {o_items, o_first, o_last};
    const char *names[3] = {"items", "first", "last"};
    int got = get_all(objs, v, 3, names, -1);
    PyObject *result = NULL, *a_ptr = NULL, *a_ind = NULL;
    int64_t *pairs = NULL;
    if (got < 3) goto done;
    const int64_t *items = v[0].buf, *first = v[1].buf, *last = v[2].buf;
    Py_ssize_t m = v[0].len / 8;
    if (v[1].len / 8 < n || v[2].len / 8 < n) {
        PyErr_SetString(PyExc_ValueError, "overlaps: arrays shorter than n");
        goto done;
    }
    if (check_items(items, m, n, "overlaps") < 0) goto done;
    Py_ssize_t npairs = overlap_pairs(items, m, first, last, &pairs);
    if (npairs < 0) goto done;
    int64_t *ptr, *ind;
    a_ptr = new_i64_array(n + 1, &ptr);
    if (!a_ptr) goto done;
    a_ind = new_i64_array(2 * npairs, &ind);
    if (!a_ind) goto done;
    if (fill_csr(pairs, npairs, n, ptr, ind) < 0) goto done;
    result = PyTuple_Pack(2, a_ptr, a_ind);
done:
    Py_XDECREF(a_ptr);
    Py_XDECREF(a_ind);
    free(pairs);
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    return result;
}

/* A max segment tree over values[0..n-1] into tree[0..2 * leaves - 1] (see planner._MaxTree). */
static void build_max_tree(int64_t *tree, const int64_t *values, Py_ssize_t n, Py_ssize_t leaves, int64_t pad) {
    tree[0] = pad;
    for (Py_ssize_t p = 0; p < leaves; p++) tree[leaves + p] = p < n ? values[p] : pad;
    for (Py_ssize_t k = leaves - 1; k >= 1; k--)
        tree[k] = tree[2 * k] > tree[2 * k + 1] ? tree[2 * k] : tree[2 * k + 1];
}

/* planner._StartOrder's arrays: for ``by_start`` (a list of buffer indices) and ``off`` (a list of offsets by
 * buffer index), the first steps, last steps, sizes and offsets by position, and the max trees of the tops
 * (offset + size, padded with -1) and of the last steps (padded with the first start - 1), over ``leaves``. */
static PyObject *native_start_order(PyObject *self, PyObject *args) {
    PyObject *by, *offs, *objs[3];
    Py_ssize_t leaves;
    if (!PyArg_ParseTuple(args, "O!O!OOOn", &PyList_Type, &by, &PyList_Type, &offs, &objs[0], &objs[1], &objs[2],
                          &leaves))
        return NULL;
    Py_buffer v[3];
    const char *names[3] = {"first", "last", "size"};
    int got = get_all(objs, v, 3, names, -1);
    PyObject *out[6] = {NULL, NULL, NULL, NULL, NULL, NULL}, *result = NULL;
    int64_t *col[6];
    if (got < 3) goto done;
    const int64_t *first = v[0].buf, *last = v[1].buf, *size = v[2].buf;
    Py_ssize_t n = PyList_GET_SIZE(by), total = v[0].len / 8;
    if (v[1].len / 8 != total || v[2].len / 8 != total || PyList_GET_SIZE(offs) != total || n < 1 || leaves < n ||
        (leaves & (leaves - 1))) {
        PyErr_SetString(PyExc_ValueError, "start_order: inconsistent arrays");
        goto done;
    }
    for (int c = 0; c < 6; c++)
        if (!(out[c] = new_i64_array(c < 4 ? n : 2 * leaves, &col[c]))) goto done;
    for (Py_ssize_t p = 0; p < n; p++) {
        long long i = PyLong_AsLongLong(PyList_GET_ITEM(by, p));
        if (i == -1 && PyErr_Occurred()) goto done;
        if (i < 0 || i >= total) {
            PyErr_SetString(PyExc_IndexError, "start_order: item out of range");
            goto done;
        }
        long long o = PyLong_AsLongLong(PyList_GET_ITEM(offs, i));
        if (o == -1 && PyErr_Occurred()) goto done;
        col[0][p] = first[i], col[1][p] = last[i], col[2][p] = size[i], col[3][p] = o;
    }
    /* the tops, computed in the tops tree's leaves, then the tree above them */
    for (Py_ssize_t p = 0; p < n; p++) col[4][leaves + p] = col[3][p] + col[2][p];
    build_max_tree(col[4], col[4] + leaves, n, leaves, -1);
    build_max_tree(col[5], col[1], n, leaves, col[0][0] - 1);
    result = PyTuple_Pack(6, out[0], out[1], out[2], out[3], out[4], out[5]);
done:
    for (int c = 0; c < 6; c++) Py_XDECREF(out[c]);
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    return result;
}

/* planner._StartOrder.window's members, for buffers at positions 0..n-1 in start order: ``tree`` is a max tree
 * of their last steps (implicit: node 1 the root, node k's children 2k and 2k+1, leaf p at P + p for P a power of
 * two >= n). The buffers live at step lo that start before it (positions < inside) are found by descending the
 * tree where its maximum reaches lo; those starting in [lo, hi] are positions inside..end-1. Returns (movers,
 * partial, spans): the positions living inside [lo, hi], those crossing a border, and the merged byte ranges of
 * those spanning it (flat lo, hi pairs). */
static PyObject *native_window(PyObject *self, PyObject *args) {
    PyObject *objs[5];
    Py_ssize_t inside, end;
    long long lo, hi;
    if (!PyArg_ParseTuple(args, "OOOOOnnLL", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &inside, &end, &lo,
                          &hi))
        return NULL;
    Py_buffer v[5];
    const char *names[5] = {"tree", "first", "last", "off", "size"};
    int got = get_all(objs, v, 5, names, -1);
    PyObject *result = NULL, *a_mv = NULL, *a_pa = NULL, *a_sp = NULL;
    int64_t *mv = NULL, *pa = NULL;
    range_t *sp = NULL;
    if (got < 5) goto done;
    const int64_t *tree = v[0].buf, *first = v[1].buf, *last = v[2].buf, *off = v[3].buf, *size = v[4].buf;
    Py_ssize_t n = v[1].len / 8, leaves = v[0].len / 16;
    if (v[2].len / 8 != n || v[3].len / 8 != n || v[4].len / 8 != n || v[0].len / 8 != 2 * leaves || leaves < n ||
        (leaves & (leaves - 1)) || inside < 0 || inside > end || end > n) {
        PyErr_SetString(PyExc_ValueError, "window: inconsistent arrays or bounds");
        goto done;
    }
    mv = (int64_t *)malloc(sizeof(int64_t) * (size_t)(n + 1));
    pa = (int64_t *)malloc(sizeof(int64_t) * (size_t)(n + 1));
    sp = (range_t *)malloc(sizeof(range_t) * (size_t)(n + 1));
    if (!mv || !pa || !sp) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t n_mv = 0, n_pa = 0, n_sp = 0;
    Py_ssize_t stack[3 * 130], depth = 0; /* (node, first leaf, width); two pushes a level */
    if (inside > 0) {
        stack[0] = 1, stack[1] = 0, stack[2] = leaves;
        depth = 1;
    }
    while (depth) {
        depth--;
        Py_ssize_t k = stack[3 * depth], start = stack[3 * depth + 1], width = stack[3 * depth + 2];
        if (tree[k] < lo) continue;
        if (width == 1) {
            if (last[start] >= hi) {
                sp[n_sp].lo = off[start];
                sp[n_sp++].hi = off[start] + size[start];
            } else {
                pa[n_pa++] = start;
            }
            continue;
        }
        Py_ssize_t half = width / 2;
        if (start + half < inside) { /* the right child first: the left one is popped (and listed) first */
            stack[3 * depth] = 2 * k + 1, stack[3 * depth + 1] = start + half, stack[3 * depth + 2] = half;
            depth++;
        }
        stack[3 * depth] = 2 * k, stack[3 * depth + 1] = start, stack[3 * depth + 2] = half;
        depth++;
    }
    for (Py_ssize_t p = inside; p < end; p++) {
        if (last[p] <= hi) {
            mv[n_mv++] = p;
        } else if (first[p] == lo) {
            sp[n_sp].lo = off[p];
            sp[n_sp++].hi = off[p] + size[p];
        } else {
            pa[n_pa++] = p;
        }
    }
    sort_ranges(sp, n_sp);
    Py_ssize_t n_merged = 0;
    for (Py_ssize_t e = 0; e < n_sp; e++) {
        if (n_merged && sp[e].lo <= sp[n_merged - 1].hi) {
            if (sp[e].hi > sp[n_merged - 1].hi) sp[n_merged - 1].hi = sp[e].hi;
        } else {
            sp[n_merged++] = sp[e];
        }
    }
    int64_t *out;
    if (!(a_mv = new_i64_array(n_mv, &out))) goto done;
    memcpy(out, mv, sizeof(int64_t) * (size_t)n_mv);
    if (!(a_pa = new_i64_array(n_pa, &out))) goto done;
    memcpy(out, pa, sizeof(int64_t) * (size_t)n_pa);
    if (!(a_sp = new_i64_array(2 * n_merged, &out))) goto done;
    for (Py_ssize_t e = 0; e < n_merged; e++) out[2 * e] = sp[e].lo, out[2 * e + 1] = sp[e].hi;
    result = PyTuple_Pack(3, a_mv, a_pa, a_sp);
done:
    Py_XDECREF(a_mv);
    Py_XDECREF(a_pa);
    Py_XDECREF(a_sp);
    free(mv);
    free(pa);
    free(sp);
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    return result;
}

typedef struct {
    int64_t step, delta;
} event_t;
static void radix_pairs(uint64_t *k, int64_t *v, uint64_t *tk, int64_t *tv, Py_ssize_t n);

/* planner._peak: the largest total size live at one step (releases first at equal steps: as the live total
 * falls through a step's releases and then rises through its starts, its largest value there is the one after
 * the whole step, so the events are sorted by step alone, by a radix sort). */
static PyObject *native_peak(PyObject *self, PyObject *args) {
    PyObject *o[3];
    if (!PyArg_ParseTuple(args, "OOO", &o[0], &o[1], &o[2])) return NULL;
    Py_buffer v[3];
    const char *names[3] = {"first", "last", "size"};
    int got = get_all(o, v, 3, names, -1);
    PyObject *result = NULL;
    uint64_t *step = NULL, *tk = NULL;
    int64_t *delta = NULL, *tv = NULL;
    if (got < 3) goto done;
    Py_ssize_t n = v[0].len / 8;
    if (v[1].len / 8 != n || v[2].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "peak: arrays of different lengths");
        goto done;
    }
    const int64_t *first = v[0].buf, *last = v[1].buf, *size = v[2].buf;
    size_t bytes = sizeof(int64_t) * (size_t)(2 * n + 1);
    step = malloc(bytes), tk = malloc(bytes), delta = malloc(bytes), tv = malloc(bytes);
    if (!step || !tk || !delta || !tv) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t m = 0;
    for (Py_ssize_t k = 0; k < n; k++)
        if (size[k]) {
            step[m] = (uint64_t)first[k] ^ 0x8000000000000000ull;
            delta[m++] = size[k];
            step[m] = (uint64_t)(last[k] + 1) ^ 0x8000000000000000ull;
            delta[m++] = -size[k];
        }
    radix_pairs(step, delta, tk, tv, m);
    int64_t live = 0, peak = 0;
    for (Py_ssize_t k = 0; k < m; k++) {
        live += delta[k];
        if ((k + 1 == m || step[k + 1] != step[k]) && live > peak) peak = live;
    }
    result = PyLong_FromLongLong(peak);
done:
    free(step);
    free(tk);
    free(delta);
    free(tv);
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    return result;
}

/* The items' first steps and last steps, each ascending, as keys in signed order (tmp: scratch of m). */
static void sorted_steps(const int64_t *items, Py_ssize_t m, const int64_t *first, const int64_t *last,
                         uint64_t *starts, uint64_t *ends, uint64_t *tmp) {
    for (Py_ssize_t q = 0; q < m; q++) {
        starts[q] = (uint64_t)first[items[q]] ^ SIGN_BIT;
        ends[q] = (uint64_t)last[items[q]] ^ SIGN_BIT;
    }
    radix_pairs(starts, NULL, tmp, NULL, m);
    radix_pairs(ends, NULL, tmp, NULL, m);
}

/* planner._count_pairs: the number of time-overlapping pairs among items. */
static PyObject *native_count_pairs(PyObject *self, PyObject *args) {
    PyObject *o[3];
    if (!PyArg_ParseTuple(args, "OOO", &o[0], &o[1], &o[2])) return NULL;
    Py_buffer v[3];
    const char *names[3] = {"items", "first", "last"};
    int got = get_all(o, v, 3, names, -1);
    PyObject *result = NULL;
    uint64_t *starts = NULL, *ends = NULL, *scratch = NULL;
    if (got < 3) goto done;
    const int64_t *items = v[0].buf, *first = v[1].buf, *last = v[2].buf;
    Py_ssize_t m = v[0].len / 8, n = v[1].len / 8;
    if (v[2].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "count_pairs: arrays of different lengths");
        goto done;
    }
    starts = (uint64_t *)malloc(sizeof(uint64_t) * (size_t)(m + 1));
    ends = (uint64_t *)malloc(sizeof(uint64_t) * (size_t)(m + 1));
    scratch = (uint64_t *)malloc(sizeof(uint64_t) * (size_t)(m + 1));
    if (!starts || !ends || !scratch) {
        PyErr_NoMemory();
        goto done;
    }
    if (check_items(items, m, n, "count_pairs") < 0) goto done;
    sorted_steps(items, m, first, last, starts, ends, scratch);
    /* the k-th item by start overlaps every earlier one except those that ended before it started */
    long long pairs = 0;
    Py_ssize_t gone = 0;
    for (Py_ssize_t k = 0; k < m; k++) {
        while (gone < m && ends[gone] < starts[k]) gone++;
        pairs += k - gone;
    }
    result = PyLong_FromLongLong(pairs);
done:
    free(starts);
    free(ends);
    free(scratch);
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    return result;
}

/* ---- the quick try (planner._quick): its orders, first fit, in one call ---- */

/* A quick order's sort key: planner._quick_keys' tuple (a, b, c, item), ascending; ``a`` is a product of two
 * int64 values (the area, the conflicts times the size), exact in 128 bits. */
typedef struct {
    __int128 a;
    int64_t b, c, item;
} qkey_t;

static inline int qkey_less(const qkey_t *x, const qkey_t *y) {
    if (x->a != y->a) return x->a < y->a;
    if (x->b != y->b) return x->b < y->b;
    if (x->c != y->c) return x->c < y->c;
    return x->item < y->item;
}

DEFINE_MERGE_SORT(sort_qkeys, qkey_t, qkey_less)

/* How many of the m ascending keys are < x (below = 1) or <= x (below = 0). */
static Py_ssize_t count_below(const uint64_t *a, Py_ssize_t m, uint64_t x, int below) {
    Py_ssize_t lo = 0, hi = m;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (below ? a[mid] < x : a[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* planner._degrees: deg[q] = the number of other items overlapping items[q] (starts, ends, tmp: scratch of m). */
static void item_degrees(const int64_t *items, Py_ssize_t m, const int64_t *first, const int64_t *last, int64_t *deg,
                         uint64_t *starts, uint64_t *ends, uint64_t *tmp) {
    sorted_steps(items, m, first, last, starts, ends, tmp);
    for (Py_ssize_t q = 0; q < m; q++)
        deg[q] = count_below(starts, m, (uint64_t)last[items[q]] ^ SIGN_BIT, 0) -
                 count_below(ends, m, (uint64_t)first[items[q]] ^ SIGN_BIT, 1) - 1;
}

/* The keys of quick order k (0: size, 1: area, 2: conflict-size, as planner._quick_keys) over the items. */
static void quick_keys(int k, const int64_t *items, Py_ssize_t m, const int64_t *first, const int64_t *last,
                       const int64_t *size, const int64_t *deg, qkey_t *keys) {
    for (Py_ssize_t q = 0; q < m; q++) {
        int64_t i = items[q], s = size[i];
        qkey_t *key = &keys[q];
        key->item = i;
        if (k == 0) {
            key->a = -(__int128)s;
            key->b = first[i];
            key->c = 0;
            continue;
        }
        key->a = -(__int128)s * (k == 1 ? (__int128)last[i] - first[i] + 1 : (__int128)deg[q]);
        key->b = -s;
        key->c = first[i];
    }
}

#define QUICK_ORDERS 3

/* quick(items, first, last, size, align, off, lb, dense) -> (k, offsets) or None: planner._quick's orders
 * (_QUICK_RUNS) in one call. Order k of the items (keys as planner._quick_keys) is placed first fit from the
 * offsets ``off`` (read only) over the items' neighbour lists (``dense``: by place_dense's scan; the same
 * offsets), stopping once the height passes ``lb``; the first order that stays within it and its offsets (a list
 * over every buffer) are returned, or None when none does. */
static PyObject *native_quick(PyObject *self, PyObject *args) {
    PyObject *objs[6];
    long long lb;
    int dense;
    if (!PyArg_ParseTuple(args, "OOOOOOLp", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &lb, &dense))
        return NULL;
    Py_buffer v[6];
    const char *names[6] = {"items", "first", "last", "size", "align", "off"};
    int got = get_all(objs, v, 6, names, -1);
    PyObject *result = NULL;
    qkey_t *keys = NULL;
    int64_t *scratch = NULL, *pairs = NULL, *ptr = NULL, *ind = NULL;
    placed_t *pl = NULL;
    range_t *obs = NULL;
    if (got < 6) goto done;
    const int64_t *items = v[0].buf, *first = v[1].buf, *last = v[2].buf, *size = v[3].buf, *align = v[4].buf;
    const int64_t *off = v[5].buf;
    Py_ssize_t m = v[0].len / 8, n = v[1].len / 8;
    for (int c = 2; c < 6; c++)
        if (v[c].len / 8 != n) {
            PyErr_SetString(PyExc_ValueError, "quick: arrays of different lengths");
            goto done;
        }
    if (check_items(items, m, n, "quick") < 0) goto done;
    keys = (qkey_t *)malloc(sizeof(qkey_t) * (size_t)(2 * m + 1));
    scratch = (int64_t *)malloc(sizeof(int64_t) * (size_t)(5 * m + n + 1)); /* order, deg, 3 x m for degrees, work */
    if (!keys || !scratch) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t *order = scratch, *deg = scratch + m, *work = scratch + 5 * m;
    Py_ssize_t cap = 0;
    if (dense) {
        if (!(pl = (placed_t *)malloc(sizeof(placed_t) * (size_t)(m + 1)))) {
            PyErr_NoMemory();
            goto done;
        }
    } else {
        Py_ssize_t npairs = overlap_pairs(items, m, first, last, &pairs);
        if (npairs < 0) goto done;
        ptr = (int64_t *)calloc((size_t)(n + 1), sizeof(int64_t));
        ind = (int64_t *)malloc(sizeof(int64_t) * (size_t)(2 * npairs + 1));
        if (!ptr || !ind) {
            PyErr_NoMemory();
            goto done;
        }
        if (fill_csr(pairs, npairs, n, ptr, ind) < 0) goto done;
        for (Py_ssize_t q = 0; q < m; q++)
            if (ptr[items[q] + 1] - ptr[items[q]] > cap) cap = ptr[items[q] + 1] - ptr[items[q]];
        if (!(obs = (range_t *)malloc(sizeof(range_t) * (size_t)(cap + 1)))) {
            PyErr_NoMemory();
            goto done;
        }
    }
    int found = -1;
    int64_t limit = lb < INT64_MAX ? (int64_t)lb + 1 : -1; /* the first height past lb */
    Py_BEGIN_ALLOW_THREADS;
    for (int k = 0; k < QUICK_ORDERS && found < 0; k++) {
        if (k == 2)
            item_degrees(items, m, first, last, deg, (uint64_t *)scratch + 2 * m, (uint64_t *)scratch + 3 * m,
                         (uint64_t *)scratch + 4 * m);
        quick_keys(k, items, m, first, last, size, deg, keys);
        sort_qkeys(keys, keys + m, m);
        for (Py_ssize_t q = 0; q < m; q++) order[q] = keys[q].item;
        memcpy(work, off, sizeof(int64_t) * (size_t)n);
        int64_t height;
        if (dense) {
            Py_ssize_t np = 0;
            for (Py_ssize_t q = 0; q < m; q++) {
                int64_t i = items[q];
                if (work[i] >= 0) placed_insert(pl, &np, (placed_t){work[i], work[i] + size[i], first[i], last[i]});
            }
            height = place_scan(order, m, first, last, size, align, work, pl, np, 0, 0, limit);
        } else {
            height = place_lists(order, m, size, align, ptr, ind, n, work, obs, NULL, 0, 0, 0, limit);
        }
        if (height <= lb) found = k;
    }
    Py_END_ALLOW_THREADS;
    if (found < 0) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    PyObject *offsets = PyList_New(n);
    if (!offsets) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyLong_FromLongLong(work[i]);
        if (!x) {
            Py_DECREF(offsets);
            goto done;
        }
        PyList_SET_ITEM(offsets, i, x);
    }
    result = Py_BuildValue("(iN)", found, offsets);
done:
    free(keys);
    free(scratch);
    free(pairs);
    free(ptr);
    free(ind);
    free(pl);
    free(obs);
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    return result;
}

/* ---- time sweep (planner._sweep / planner._Gaps) ----
 *
 * The live buffers are kept in offset order as a doubly linked list (positions in the order), so that a release
 * finds the buffers below and above it at once; the free ranges between them (the gaps, below the top live
 * buffer) are kept in treaps (randomised balanced search trees) keyed so that the fit queries take one descent:
 * first fit keeps them by start, best fit by (length, start) and by (length class, start). Each node also holds
 * the largest length of its subtree ("the lowest gap above some key of at least s bytes" skips whole subtrees)
 * and the live buffer just above its gap. Adding, dropping or finding a gap costs O(log gaps). */

typedef struct {
    int64_t k1, k2, len, mx;
    uint64_t classes; /* bit c set when a gap of the subtree has a length of bit length c */
    int32_t l, r, above;
    uint32_t pri;
} tnode_t;

/* a treap in a pool of nodes (index 0 is the empty tree; freed nodes are chained by l) */
typedef struct {
    tnode_t *n;
    int32_t root, free, used, cap;
    uint32_t seed;
} treap_t;

static inline int key_less(int64_t a1, int64_t a2, int64_t b1, int64_t b2) { return a1 < b1 || (a1 == b1 && a2 < b2); }

static inline int bitlen(int64_t v) { return v > 0 ? 64 - __builtin_clzll((uint64_t)v) : 0; }

static inline void t_pull(tnode_t *n, int32_t t) {
    int64_t m = n[t].len, a = n[n[t].l].mx, b = n[n[t].r].mx;
    if (a > m) m = a;
    if (b > m) m = b;
    n[t].mx = m;
    n[t].classes = n[n[t].l].classes | n[n[t].r].classes | (1ull << (bitlen(n[t].len) & 63));
}

static int t_init(treap_t *t) {
    t->cap = 1024;
    t->n = (tnode_t *)malloc(sizeof(tnode_t) * (size_t)t->cap);
    if (!t->n) return -1;
    memset(&t->n[0], 0, sizeof(tnode_t));
    t->n[0].mx = INT64_MIN; /* the empty tree: no gap (and no class) */
    t->root = t->free = 0;
    t->used = 1;
    t->seed = 2463534242u;
    return 0;
}

/* a new node, or -1 when out of memory (the pool may move: take pointers into it only after this) */
static int32_t t_node(treap_t *t, int64_t k1, int64_t k2, int64_t len, int32_t above) {
    int32_t x = t->free;
    if (x) {
        t->free = t->n[x].l;
    } else {
        if (t->used == t->cap) {
            if (t->cap > INT32_MAX / 2) return -1;
            tnode_t *p = (tnode_t *)realloc(t->n, sizeof(tnode_t) * (size_t)(2 * t->cap));
            if (!p) return -1;
            t->n = p;
            t->cap *= 2;
        }
        x = t->used++;
    }
    uint32_t s = t->seed; /* xorshift32: the shape decides the speed only, never an answer */
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    t->seed = s;
    tnode_t *p = &t->n[x];
    p->k1 = k1;
    p->k2 = k2;
    p->len = p->mx = len;
    p->classes = 1ull << (bitlen(len) & 63);
    p->l = p->r = 0;
    p->above = above;
    p->pri = s;
    return x;
}

/* split t into the keys below (k1, k2) and the others */
static void t_split(tnode_t *n, int32_t t, int64_t k1, int64_t k2, int32_t *l, int32_t *r) {
    if (!t) {
        *l = *r = 0;
        return;
    }
    if (key_less(n[t].k1, n[t].k2, k1, k2)) {
        t_split(n, n[t].r, k1, k2, &n[t].r, r);
        *l = t;
    } else {
        t_split(n, n[t].l, k1, k2, l, &n[t].l);
        *r = t;
    }
    t_pull(n, t);
}

static int32_t t_merge(tnode_t *n, int32_t a, int32_t b) {
    if (!a) return b;
    if (!b) return a;
    if (n[a].pri > n[b].pri) {
        n[a].r = t_merge(n, n[a].r, b);
        t_pull(n, a);
        return a;
    }
    n[b].l = t_merge(n, a, n[b].l);
    t_pull(n, b);
    return b;
}

static int32_t t_insert(tnode_t *n, int32_t t, int32_t x) {
    if (!t) return x;
    if (n[x].pri > n[t].pri) {
        t_split(n, t, n[x].k1, n[x].k2, &n[x].l, &n[x].r);
        t_pull(n, x);
        return x;
    }
    if (key_less(n[x].k1, n[x].k2, n[t].k1, n[t].k2))
        n[t].l = t_insert(n, n[t].l, x);
    else
        n[t].r = t_insert(n, n[t].r, x);
    t_pull(n, t);
    return t;
}

/* drop the node of key (k1, k2) (it is there); *gone is its index */
static int32_t t_erase(tnode_t *n, int32_t t, int64_t k1, int64_t k2, int32_t *gone) {
    if (n[t].k1 == k1 && n[t].k2 == k2) {
        *gone = t;
        return t_merge(n, n[t].l, n[t].r);
    }
    if (key_less(k1, k2, n[t].k1, n[t].k2))
        n[t].l = t_erase(n, n[t].l, k1, k2, gone);
    else
        n[t].r = t_erase(n, n[t].r, k1, k2, gone);
    t_pull(n, t);
    return t;
}

/* the node of key (k1, k2) (it is there) gets the key (nk1, nk2), length len and live buffer above; the new key
 * must keep the node's place in the order */
static void t_update(tnode_t *n, int32_t t, int64_t k1, int64_t k2, const tnode_t *to) {
    if (n[t].k1 == k1 && n[t].k2 == k2) {
        n[t].k1 = to->k1;
        n[t].k2 = to->k2;
        n[t].len = to->len;
        n[t].above = to->above;
    } else {
        t_update(n, key_less(k1, k2, n[t].k1, n[t].k2) ? n[t].l : n[t].r, k1, k2, to);
    }
    t_pull(n, t);
}

static int t_add(treap_t *t, int64_t k1, int64_t k2, int64_t len, int32_t above) {
    int32_t x = t_node(t, k1, k2, len, above);
    if (x < 0) return -1;
    t->root = t_insert(t->n, t->root, x);
    return 0;
}

static void t_drop(treap_t *t, int64_t k1, int64_t k2) {
    int32_t gone = 0;
    t->root = t_erase(t->n, t->root, k1, k2, &gone);
    t->n[gone].l = t->free;
    t->free = gone;
}

/* the node of lowest key above (k1, k2) among those of length >= s, or 0 */
static int32_t t_after(const tnode_t *n, int32_t t, int64_t k1, int64_t k2, int64_t s) {
    if (!t || n[t].mx < s) return 0;
    if (key_less(k1, k2, n[t].k1, n[t].k2)) {
        int32_t found = t_after(n, n[t].l, k1, k2, s);
        if (found) return found;
        if (n[t].len >= s) return t;
    }
    return t_after(n, n[t].r, k1, k2, s);
}

/* the node of lowest key above (k1, k2) among those whose length has bit length c, or 0 */
static int32_t t_after_class(const tnode_t *n, int32_t t, int64_t k1, int64_t k2, int c) {
    if (!t || !(n[t].classes >> c & 1)) return 0;
    if (key_less(k1, k2, n[t].k1, n[t].k2)) {
        int32_t found = t_after_class(n, n[t].l, k1, k2, c);
        if (found) return found;
        if (bitlen(n[t].len) == c) return t;
    }
    return t_after_class(n, n[t].r, k1, k2, c);
}

/* A sorted list of (length, start, live buffer above) in blocks of at most BSL_B entries, with the last key of
 * each block in one array: best fit's gaps by (length, start). Finding a key is two binary searches (blocks,
 * then entries), and an add or a drop moves at most a block (a full block splits in two): cheaper than a tree
 * for the few thousand gaps a sweep holds, and logarithmic in them but for the block. */
#define BSL_B 64

typedef struct {
    int64_t len, lo;
    int32_t above;
} tentry_t;

typedef struct {
    tentry_t **blk;
    int32_t *cnt;
    int64_t *last1, *last2; /* each block's last key */
    Py_ssize_t nb, cap;
} bsl_t;

/* the first block whose last key is >= (k1, k2) (nb if none) */
static Py_ssize_t bsl_block(const bsl_t *l, int64_t k1, int64_t k2) {
    Py_ssize_t lo = 0, hi = l->nb;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (key_less(l->last1[mid], l->last2[mid], k1, k2))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* the first entry of block b whose key is >= (k1, k2) */
static int32_t bsl_entry(const bsl_t *l, Py_ssize_t b, int64_t k1, int64_t k2) {
    const tentry_t *e = l->blk[b];
    int32_t lo = 0, hi = l->cnt[b];
    while (lo < hi) {
        int32_t mid = (lo + hi) / 2;
        if (key_less(e[mid].len, e[mid].lo, k1, k2))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void bsl_relast(bsl_t *l, Py_ssize_t b) {
    const tentry_t *e = &l->blk[b][l->cnt[b] - 1];
    l->last1[b] = e->len;
    l->last2[b] = e->lo;
}

/* room for a block at b (the blocks from b move up) */
static int bsl_open(bsl_t *l, Py_ssize_t b) {
    if (l->nb == l->cap) {
        Py_ssize_t cap = l->cap ? 2 * l->cap : 16;
        tentry_t **blk = realloc(l->blk, sizeof(tentry_t *) * (size_t)cap);
        if (blk) l->blk = blk;
        int32_t *cnt = realloc(l->cnt, sizeof(int32_t) * (size_t)cap);
        if (cnt) l->cnt = cnt;
        int64_t *l1 = realloc(l->last1, sizeof(int64_t) * (size_t)cap);
        if (l1) l->last1 = l1;
        int64_t *l2 = realloc(l->last2, sizeof(int64_t) * (size_t)cap);
        if (l2) l->last2 = l2;
        if (!blk || !cnt || !l1 || !l2) return -1;
        l->cap = cap;
    }
    tentry_t *fresh = malloc(sizeof(tentry_t) * BSL_B);
    if (!fresh) return -1;
    Py_ssize_t after = l->nb - b;
    memmove(l->blk + b + 1, l->blk + b, sizeof(tentry_t *) * (size_t)after);
    memmove(l->cnt + b + 1, l->cnt + b, sizeof(int32_t) * (size_t)after);
    memmove(l->last1 + b + 1, l->last1 + b, sizeof(int64_t) * (size_t)after);
    memmove(l->last2 + b + 1, l->last2 + b, sizeof(int64_t) * (size_t)after);
    l->blk[b] = fresh;
    l->cnt[b] = 0;
    l->nb++;
    return 0;
}

static int bsl_add(bsl_t *l, int64_t len, int64_t lo, int32_t above) {
    Py_ssize_t b = bsl_block(l, len, lo);
    if (b == l->nb) {
        if (b == 0) {
            if (bsl_open(l, 0) < 0) return -1;
        } else {
            b--; /* above every key: at the end of the last block */
        }
    }
    if (l->cnt[b] == BSL_B) { /* split: the upper half goes to a new block after it */
        if (bsl_open(l, b + 1) < 0) return -1;
        memcpy(l->blk[b + 1], l->blk[b] + BSL_B / 2, sizeof(tentry_t) * (BSL_B / 2));
        l->cnt[b] = l->cnt[b + 1] = BSL_B / 2;
        bsl_relast(l, b);
        bsl_relast(l, b + 1);
        if (!key_less(len, lo, l->last1[b], l->last2[b])) b++;
    }
    tentry_t *e = l->blk[b];
    int32_t i = bsl_entry(l, b, len, lo);
    memmove(e + i + 1, e + i, sizeof(tentry_t) * (size_t)(l->cnt[b] - i));
    e[i].len = len;
    e[i].lo = lo;
    e[i].above = above;
    l->cnt[b]++;
    bsl_relast(l, b);
    return 0;
}

/* drop the entry of key (len, lo) (it is there) */
static void bsl_drop(bsl_t *l, int64_t len, int64_t lo) {
    Py_ssize_t b = bsl_block(l, len, lo);
    int32_t i = bsl_entry(l, b, len, lo);
    tentry_t *e = l->blk[b];
    memmove(e + i, e + i + 1, sizeof(tentry_t) * (size_t)(l->cnt[b] - i - 1));
    if (--l->cnt[b]) {
        bsl_relast(l, b);
        return;
    }
    free(e);
    Py_ssize_t after = l->nb - b - 1;
    memmove(l->blk + b, l->blk + b + 1, sizeof(tentry_t *) * (size_t)after);
    memmove(l->cnt + b, l->cnt + b + 1, sizeof(int32_t) * (size_t)after);
    memmove(l->last1 + b, l->last1 + b + 1, sizeof(int64_t) * (size_t)after);
    memmove(l->last2 + b, l->last2 + b + 1, sizeof(int64_t) * (size_t)after);
    l->nb--;
}

static void bsl_free(bsl_t *l) {
    for (Py_ssize_t b = 0; b < l->nb; b++) free(l->blk[b]);
    free(l->blk);
    free(l->cnt);
    free(l->last1);
    free(l->last2);
}

/* The sweep's state: the gaps (free ranges below the top live buffer) in a treap by start (``at``, with the
 * largest length and the length classes of each subtree) and for best fit also in a block list by (length,
 * start) (``tight``, for the size's own class), the live buffers by offset (``prev`` and
 * ``next`` of each position in the order, -1 at the ends; ``last`` the highest), each placed buffer's range and
 * the top (end of the highest live buffer, or the base). */
typedef struct {
    int64_t base, top;
    int best_fit;
    int32_t last;
    int32_t *prev, *next;
    int64_t *lo, *hi;
    treap_t at;
    bsl_t tight;
} gaps_t;

/* the gap a fit lands in: [lo, hi) below the live buffer ``above``, or above = -1 for the top */
typedef struct {
    int64_t lo, hi;
    int32_t above;
} gap_t;

static int gaps_init(gaps_t *g, int64_t base, int best_fit, Py_ssize_t m) {
    g->base = g->top = base;
    g->best_fit = best_fit;
    g->last = -1;
    g->prev = (int32_t *)malloc(sizeof(int32_t) * (size_t)(m + 1));
    g->next = (int32_t *)malloc(sizeof(int32_t) * (size_t)(m + 1));
    g->lo = (int64_t *)malloc(sizeof(int64_t) * (size_t)(m + 1));
    g->hi = (int64_t *)malloc(sizeof(int64_t) * (size_t)(m + 1));
    if (!g->prev || !g->next || !g->lo || !g->hi) return -1;
    return t_init(&g->at);
}

static void gaps_free(gaps_t *g) {
    free(g->prev);
    free(g->next);
    free(g->lo);
    free(g->hi);
    free(g->at.n);
    bsl_free(&g->tight);
}

/* record the free range [lo, hi) below the live buffer ``above`` (nothing if empty) */
static int add_gap(gaps_t *g, int64_t lo, int64_t hi, int32_t above) {
    if (hi <= lo) return 0;
    int64_t len = hi - lo;
    if (t_add(&g->at, lo, 0, len, above) < 0) return -1;
    return g->best_fit ? bsl_add(&g->tight, len, lo, above) : 0;
}

/* forget the free range [lo, hi) */
static void drop_gap(gaps_t *g, int64_t lo, int64_t hi) {
    t_drop(&g->at, lo, 0);
    if (g->best_fit) bsl_drop(&g->tight, hi - lo, lo);
}

/* the free range [lo, hi) becomes [nlo, nhi) below ``above``, no other one starting between lo and nlo: one
 * descent by start (the order is kept), and for best fit a drop and an add by length */
static int move_gap(gaps_t *g, int64_t lo, int64_t hi, int64_t nlo, int64_t nhi, int32_t above) {
    tnode_t to = {.k1 = nlo, .k2 = 0, .len = nhi - nlo, .above = above};
    t_update(g->at.n, g->at.root, lo, 0, &to);
    if (!g->best_fit) return 0;
    bsl_drop(&g->tight, hi - lo, lo);
    return bsl_add(&g->tight, nhi - nlo, nlo, above);
}

static void gap_of(const tnode_t *p, int64_t lo, gap_t *gap) {
    gap->lo = lo;
    gap->hi = lo + p->len;
    gap->above = p->above;
}

/* planner._Gaps._find_tight: the tightest gap of the size's class (aligned room, ties by the lowest start),
 * else the lowest fitting gap of the lowest larger class that has one, else the top */
static int64_t gaps_find_tight(const gaps_t *g, int64_t s, int64_t a, gap_t *gap) {
    const bsl_t *l = &g->tight;
    int cs = bitlen(s);
    int64_t best = -1, room = 0;
    Py_ssize_t b = bsl_block(l, s, INT64_MIN);
    for (int32_t i = b < l->nb ? bsl_entry(l, b, s, INT64_MIN) : 0; b < l->nb; i = 0, b++) {
        const tentry_t *e = l->blk[b];
        for (; i < l->cnt[b]; i++) {
            int64_t len = e[i].len, lo = e[i].lo;
            if (bitlen(len) != cs || (best >= 0 && len - (a - 1) > room)) goto done; /* none after is tighter */
            int64_t x = align_up(lo, a), r = lo + len - x;
            if (r >= s && (best < 0 || r < room || (r == room && lo < gap->lo))) {
                best = x;
                room = r;
                gap->lo = lo;
                gap->hi = lo + len;
                gap->above = e[i].above;
            }
            if (a == 1) goto done; /* by length, then start: the first is the tightest */
        }
    }
done:
    if (best >= 0) return best;
    const tnode_t *n = g->at.n;
    int32_t t;
    int32_t root = g->at.root;
    for (int c = cs + 1; c < 64; c++) {
        if (!(n[root].classes >> c & 1)) continue;
        for (t = t_after_class(n, root, INT64_MIN, INT64_MIN, c); t; t = t_after_class(n, root, n[t].k1, 0, c)) {
            int64_t x = align_up(n[t].k1, a);
            if (x + s <= n[t].k1 + n[t].len) {
                gap_of(&n[t], n[t].k1, gap);
                return x;
            }
        }
    }
    return align_up(g->top, a);
}

/* Lowest aligned offset where s bytes are free (or, best fit, see gaps_find_tight): planner._Gaps.find; *gap is
 * where (above = -1: the top). Every gap that fits is in the size's class or a larger one, and the lowest fitting
 * gap of all holds the lowest offset: the first node by start of length >= s that fits. */
static int64_t gaps_find(const gaps_t *g, int64_t s, int64_t a, int best_fit, gap_t *gap) {
    gap->above = -1;
    if (best_fit) return gaps_find_tight(g, s, a, gap);
    const tnode_t *n = g->at.n;
    for (int32_t t = t_after(n, g->at.root, INT64_MIN, INT64_MIN, s); t; t = t_after(n, g->at.root, n[t].k1, 0, s)) {
        int64_t x = align_up(n[t].k1, a);
        if (x + s <= n[t].k1 + n[t].len) {
            gap_of(&n[t], n[t].k1, gap);
            return x;
        }
    }
    return align_up(g->top, a);
}

/* the buffer at position k takes [x, x+s), inside *gap: planner._Gaps.occupy */
static int gaps_occupy(gaps_t *g, int32_t k, int64_t x, int64_t s, const gap_t *gap) {
    g->lo[k] = x;
    g->hi[k] = x + s;
    if (gap->above < 0) { /* above every live buffer */
        g->prev[k] = g->last;
        g->next[k] = -1;
        if (g->last >= 0) g->next[g->last] = k;
        g->last = k;
        int64_t below = g->top;
        g->top = x + s;
        return add_gap(g, below, x, k);
    }
    int32_t up = gap->above, down = g->prev[up];
    g->prev[k] = down;
    g->next[k] = up;
    g->prev[up] = k;
    if (down >= 0) g->next[down] = k;
    if (x > gap->lo) {
        if (move_gap(g, gap->lo, gap->hi, gap->lo, x, k) < 0) return -1;
        return add_gap(g, x + s, gap->hi, up);
    }
    if (x + s < gap->hi) return move_gap(g, gap->lo, gap->hi, x + s, gap->hi, up);
    drop_gap(g, gap->lo, gap->hi);
    return 0;
}

/* the buffer at position k is freed: planner._Gaps.release (the range from the end of the live buffer below it,
 * or the base, to the start of the one above becomes one gap; or the top comes down) */
static int gaps_release(gaps_t *g, int32_t k) {
    int64_t x = g->lo[k], end = g->hi[k];
    int32_t down = g->prev[k], up = g->next[k];
    int64_t below = down >= 0 ? g->hi[down] : g->base;
    if (down >= 0) g->next[down] = up;
    if (up < 0) {
        g->last = down;
        if (below < x) drop_gap(g, below, x);
        g->top = below;
        return 0;
    }
    g->prev[up] = down;
    int64_t next = g->lo[up];
    if (below < x) {
        if (next > end) drop_gap(g, end, next);
        return move_gap(g, below, x, below, next, up);
    }
    if (next > end) return move_gap(g, end, next, x, next, up);
    return add_gap(g, x, end, up);
}

/* min-heap of (last step, position in the order) */
static void heap_push(int64_t *h, Py_ssize_t *n, int64_t last, int64_t k) {
    Py_ssize_t i = (*n)++;
    while (i) {
        Py_ssize_t p = (i - 1) / 2;
        if (h[2 * p] <= last) break;
        h[2 * i] = h[2 * p];
        h[2 * i + 1] = h[2 * p + 1];
        i = p;
    }
    h[2 * i] = last;
    h[2 * i + 1] = k;
}

static int64_t heap_pop(int64_t *h, Py_ssize_t *n) {
    int64_t top = h[1];
    Py_ssize_t m = --(*n);
    int64_t last = h[2 * m], k = h[2 * m + 1];
    Py_ssize_t i = 0;
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= m) break;
        if (c + 1 < m && h[2 * (c + 1)] < h[2 * c]) c++;
        if (h[2 * c] >= last) break;
        h[2 * i] = h[2 * c];
        h[2 * i + 1] = h[2 * c + 1];
        i = c;
    }
    h[2 * i] = last;
    h[2 * i + 1] = k;
    return top;
}

static PyObject *native_sweep(PyObject *self, PyObject *args) {
    PyObject *o[6];
    long long base;
    int best_fit;
    if (!PyArg_ParseTuple(args, "OOOOOOLp", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &base, &best_fit)) return NULL;
    Py_buffer v[6];
    const char *names[6] = {"order", "first", "last", "size", "align", "off"};
    int got = get_all(o, v, 6, names, 5);
    PyObject *result = NULL;
    gaps_t g;
    memset(&g, 0, sizeof g);
    int64_t *heap = NULL;
    if (got < 6) goto done;
    const int64_t *order = v[0].buf, *first = v[1].buf, *last = v[2].buf, *size = v[3].buf, *align = v[4].buf;
    int64_t *off = v[5].buf;
    Py_ssize_t m = v[0].len / 8, n = v[1].len / 8;
    if (v[2].len / 8 != n || v[3].len / 8 != n || v[4].len / 8 != n || v[5].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "sweep: arrays of different lengths");
        goto done;
    }
    for (Py_ssize_t k = 0; k < m; k++)
        if (order[k] < 0 || order[k] >= n || size[order[k]] <= 0) {
            PyErr_SetString(PyExc_ValueError, "sweep: item out of range or of no size");
            goto done;
        }
    if (m >= INT32_MAX / 2) {
        PyErr_NoMemory();
        goto done;
    }
    heap = (int64_t *)malloc(sizeof(int64_t) * 2 * (size_t)(m + 1));
    if (!heap || gaps_init(&g, base, best_fit, m) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t nheap = 0;
    int64_t height = base;
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t k = 0; k < m && !failed; k++) {
        int64_t b = order[k], f = first[b];
        gap_t gap;
        while (nheap && heap[0] < f)
            if (gaps_release(&g, (int32_t)heap_pop(heap, &nheap)) < 0) failed = 1;
        int64_t x = gaps_find(&g, size[b], align[b], best_fit, &gap);
        if (gaps_occupy(&g, (int32_t)k, x, size[b], &gap) < 0) failed = 1;
        heap_push(heap, &nheap, last[b], k);
        off[b] = x;
        if (x + size[b] > height) height = x + size[b];
    }
    Py_END_ALLOW_THREADS;
    if (failed)
        PyErr_NoMemory();
    else
        result = PyLong_FromLongLong(height);
done:
    free(heap);
    gaps_free(&g);
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    return result;
}

/* ---- sorting and the planner's O(n) passes (planner._sorted, _groups, _Arrays, _offsets_dict) ---- */


#define RADIX_MIN 256

typedef struct {
    uint64_t key;
    int64_t val;
} ukv_t;

static inline int ukv_less(const ukv_t *x, const ukv_t *y) { return x->key < y->key; }

DEFINE_MERGE_SORT(sort_ukv, ukv_t, ukv_less)

static inline int u64_less(const uint64_t *x, const uint64_t *y) { return *x < *y; }

DEFINE_MERGE_SORT(sort_u64, uint64_t, u64_less)

/* Stable LSD radix sort of n (key, val) pairs by unsigned key, a byte a pass (passes where every key has the
 * same byte are skipped; below RADIX_MIN pairs, a merge sort); tk and tv are scratch of n; v and tv may be NULL
 * (keys alone). */
static void radix_pairs(uint64_t *k, int64_t *v, uint64_t *tk, int64_t *tv, Py_ssize_t n) {
    Py_ssize_t count[8][256];
    if (n < 2) return;
    if (n < RADIX_MIN && !v) { /* keys alone: merged in place, tk the scratch */
        sort_u64(k, tk, n);
        return;
    }
    if (n < RADIX_MIN) { /* the same stable order by merging: cheaper than the counts on short arrays */
        ukv_t *pairs = (ukv_t *)malloc(sizeof(ukv_t) * 2 * (size_t)n);
        if (pairs) {
            for (Py_ssize_t i = 0; i < n; i++) pairs[i] = (ukv_t){k[i], v ? v[i] : 0};
            sort_ukv(pairs, pairs + n, n);
            for (Py_ssize_t i = 0; i < n; i++) {
                k[i] = pairs[i].key;
                if (v) v[i] = pairs[i].val;
            }
            free(pairs);
            return;
        }
    }
    memset(count, 0, sizeof count);
    for (Py_ssize_t i = 0; i < n; i++)
        for (int d = 0; d < 8; d++) count[d][(k[i] >> (8 * d)) & 255]++;
    uint64_t *sk = k, *dk = tk;
    int64_t *sv = v, *dv = tv;
    for (int d = 0; d < 8; d++) {
        if (count[d][(k[0] >> (8 * d)) & 255] == n) continue;
        Py_ssize_t pos[256], at = 0;
        for (int b = 0; b < 256; b++) {
            pos[b] = at;
            at += count[d][b];
        }
        if (v) {
            for (Py_ssize_t i = 0; i < n; i++) {
                Py_ssize_t p = pos[(sk[i] >> (8 * d)) & 255]++;
                dk[p] = sk[i];
                dv[p] = sv[i];
            }
        } else {
            for (Py_ssize_t i = 0; i < n; i++) dk[pos[(sk[i] >> (8 * d)) & 255]++] = sk[i];
        }
        uint64_t *t1 = sk;
        sk = dk;
        dk = t1;
        int64_t *t2 = sv;
        sv = dv;
        dv = t2;
    }
    if (sk != k) {
        memcpy(k, sk, sizeof(uint64_t) * (size_t)n);
        if (v) memcpy(v, sv, sizeof(int64_t) * (size_t)n);
    }
}

/* items (m of them, each in [0, n)) sorted by the columns (keys[c][item], descending where desc[c]), most
 * significant first, ties by the item: into out (and scratch k, tk, tv of m) */
static void sort_by(const int64_t *items, Py_ssize_t m, const int64_t **keys, const int *desc, int ncols,
                    int64_t *out, uint64_t *k, uint64_t *tk, int64_t *tv) {
    int ascending = 1;
    for (Py_ssize_t i = 0; i < m; i++) {
        out[i] = items[i];
        if (i && items[i] <= items[i - 1]) ascending = 0;
    }
    if (!ascending) {
        for (Py_ssize_t i = 0; i < m; i++) k[i] = (uint64_t)out[i] ^ SIGN_BIT;
        radix_pairs(k, out, tk, tv, m);
    }
    for (int c = ncols - 1; c >= 0; c--) {
        for (Py_ssize_t i = 0; i < m; i++) {
            uint64_t key = (uint64_t)keys[c][out[i]] ^ SIGN_BIT;
            k[i] = desc[c] ? ~key : key;
        }
        radix_pairs(k, out, tk, tv, m);
    }
}

/* sort_items(items, columns) -> array: planner._sorted (columns: ((array, descending), ...)) */
static PyObject *native_sort_items(PyObject *self, PyObject *args) {
    PyObject *items_obj, *cols;
    if (!PyArg_ParseTuple(args, "OO!", &items_obj, &PyTuple_Type, &cols)) return NULL;
    int ncols = (int)PyTuple_GET_SIZE(cols);
    if (ncols < 1 || ncols > 6) {
        PyErr_SetString(PyExc_ValueError, "sort_items: 1 to 6 columns");
        return NULL;
    }
    Py_buffer v[7];
    int got = 0, desc[6];
    const int64_t *keys[6];
    PyObject *result = NULL;
    uint64_t *k = NULL, *tk = NULL;
    int64_t *tv = NULL;
    if (get_i64(items_obj, &v[got], 0, "items") < 0) goto done;
    got++;
    for (int c = 0; c < ncols; c++) {
        PyObject *col = PyTuple_GET_ITEM(cols, c);
        if (!PyTuple_Check(col) || PyTuple_GET_SIZE(col) != 2) {
            PyErr_SetString(PyExc_TypeError, "sort_items: a column is (array, descending)");
            goto done;
        }
        if (get_i64(PyTuple_GET_ITEM(col, 0), &v[got], 0, "column") < 0) goto done;
        got++;
        desc[c] = PyObject_IsTrue(PyTuple_GET_ITEM(col, 1));
        keys[c] = v[c + 1].buf;
    }
    const int64_t *items = v[0].buf;
    Py_ssize_t m = v[0].len / 8, n = v[1].len / 8;
    for (int c = 1; c < ncols; c++)
        if (v[c + 1].len / 8 != n) {
            PyErr_SetString(PyExc_ValueError, "sort_items: columns of different lengths");
            goto done;
        }
    if (check_items(items, m, n, "sort_items") < 0) goto done;
    int64_t *out;
    result = new_i64_array(m, &out);
    if (!result) goto done;
    k = (uint64_t *)malloc(sizeof(uint64_t) * (size_t)(m + 1));
    tk = (uint64_t *)malloc(sizeof(uint64_t) * (size_t)(m + 1));
    tv = (int64_t *)malloc(sizeof(int64_t) * (size_t)(m + 1));
    if (!k || !tk || !tv) {
        Py_CLEAR(result);
        PyErr_NoMemory();
        goto done;
    }
    sort_by(items, m, keys, desc, ncols, out, k, tk, tv);
done:
    free(k);
    free(tk);
    free(tv);
    for (int c = 0; c < got; c++) PyBuffer_Release(&v[c]);
    return result;
}

/* components(items, first, last) -> (grouped, ends, spanning, span_ends): planner._groups. The items split into
 * groups whose lifetimes chain-overlap, in time order, each ascending (grouped[ends[g-1]:ends[g]]), and per
 * group its items live over all of it (first at its first step, last at its last), ascending
 * (spanning[span_ends[g-1]:span_ends[g]]). */
static PyObject *native_components(PyObject *self, PyObject *args) {
    PyObject *o[3];
    if (!PyArg_ParseTuple(args, "OOO", &o[0], &o[1], &o[2])) return NULL;
    Py_buffer v[3];
    const char *names[3] = {"items", "first", "last"};
    int got = get_all(o, v, 3, names, -1);
    PyObject *result = NULL, *grouped = NULL, *ends = NULL, *spanning = NULL, *span_ends = NULL;
    uint64_t *k = NULL, *tk = NULL;
    int64_t *byidx = NULL, *bytime = NULL, *tv = NULL, *gid = NULL, *glo = NULL, *ghi = NULL, *fill = NULL;
    if (got < 3) goto done;
    const int64_t *items = v[0].buf, *first = v[1].buf, *last = v[2].buf;
    Py_ssize_t m = v[0].len / 8, n = v[1].len / 8;
    if (v[2].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "components: arrays of different lengths");
        goto done;
    }
    if (check_items(items, m, n, "components") < 0) goto done;
    size_t bytes = sizeof(int64_t) * (size_t)(m + 1);
    k = malloc(bytes), tk = malloc(bytes), tv = malloc(bytes), byidx = malloc(bytes), bytime = malloc(bytes);
    gid = malloc(bytes), glo = malloc(bytes), ghi = malloc(bytes), fill = malloc(bytes);
    if (!k || !tk || !tv || !byidx || !bytime || !gid || !glo || !ghi || !fill) {
        PyErr_NoMemory();
        goto done;
    }
    /* by index (byidx), then the positions in byidx stably by first step (bytime): the order of
     * planner._time_components, ties by the item */
    sort_by(items, m, NULL, NULL, 0, byidx, k, tk, tv);
    for (Py_ssize_t i = 0; i < m; i++) {
        k[i] = (uint64_t)first[byidx[i]] ^ SIGN_BIT;
        bytime[i] = i;
    }
    radix_pairs(k, bytime, tk, tv, m);
    Py_ssize_t groups = 0; /* gid: the group of each position in byidx */
    int64_t reach = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        int64_t it = byidx[bytime[i]];
        if (!groups || first[it] > reach) {
            glo[groups] = first[it];
            ghi[groups] = last[it];
            reach = last[it];
            groups++;
        } else if (last[it] > reach) {
            reach = last[it];
            ghi[groups - 1] = reach;
        }
        gid[bytime[i]] = groups - 1;
    }
    int64_t *pg, *pe, *ps, *pse;
    grouped = new_i64_array(m, &pg);
    ends = new_i64_array(groups, &pe);
    if (!grouped || !ends) goto done;
    for (Py_ssize_t g = 0; g < groups; g++) fill[g] = 0;
    Py_ssize_t nspan = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        int64_t g = gid[i], it = byidx[i];
        fill[g]++;
        if (first[it] == glo[g] && last[it] == ghi[g]) nspan++;
    }
    for (Py_ssize_t g = 0, at = 0; g < groups; g++) {
        at += fill[g];
        pe[g] = at;
        fill[g] = at - fill[g]; /* next free slot of group g */
    }
    spanning = new_i64_array(nspan, &ps);
    span_ends = new_i64_array(groups, &pse);
    if (!spanning || !span_ends) goto done;
    for (Py_ssize_t i = 0; i < m; i++) pg[fill[gid[i]]++] = byidx[i];
    for (Py_ssize_t g = 0; g < groups; g++) fill[g] = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        int64_t g = gid[i], it = byidx[i];
        if (first[it] == glo[g] && last[it] == ghi[g]) fill[g]++;
    }
    for (Py_ssize_t g = 0, at = 0; g < groups; g++) {
        at += fill[g];
        pse[g] = at;
        fill[g] = at - fill[g];
    }
    for (Py_ssize_t i = 0; i < m; i++) {
        int64_t g = gid[i], it = byidx[i];
        if (first[it] == glo[g] && last[it] == ghi[g]) ps[fill[g]++] = it;
    }
    result = PyTuple_Pack(4, grouped, ends, spanning, span_ends);
done:
    Py_XDECREF(grouped);
    Py_XDECREF(ends);
    Py_XDECREF(spanning);
    Py_XDECREF(span_ends);
    free(k), free(tk), free(tv), free(byidx), free(bytime), free(gid), free(glo), free(ghi), free(fill);
    for (int c = 0; c < got; c++) PyBuffer_Release(&v[c]);
    return result;
}

/* ingest(first, last, size, align) -> (first64, last64, size64, align64, min_size, min_align, min_length,
 * sum_size, max_size, max_align, max_last, min_first), or None when a value (or the sum of the sizes, or a
 * length) does not fit int64: planner._Arrays' int64 arrays and the figures its checks need, in one pass. */
static PyObject *native_ingest(PyObject *self, PyObject *args) {
    PyObject *lists[4];
    if (!PyArg_ParseTuple(args, "O!O!O!O!", &PyList_Type, &lists[0], &PyList_Type, &lists[1], &PyList_Type, &lists[2],
                          &PyList_Type, &lists[3]))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(lists[0]);
    for (int c = 1; c < 4; c++)
        if (PyList_GET_SIZE(lists[c]) != n) {
            PyErr_SetString(PyExc_ValueError, "ingest: lists of different lengths");
            return NULL;
        }
    PyObject *arrays[4] = {NULL, NULL, NULL, NULL}, *result = NULL;
    int64_t *data[4];
    for (int c = 0; c < 4; c++)
        if (!(arrays[c] = new_i64_array(n, &data[c]))) goto done;
    for (int c = 0; c < 4; c++)
        for (Py_ssize_t i = 0; i < n; i++) {
            int overflow = 0;
            long long x = PyLong_AsLongLongAndOverflow(PyList_GET_ITEM(lists[c], i), &overflow);
            if (overflow) goto none;
            if (x == -1 && PyErr_Occurred()) goto done;
            data[c][i] = x;
        }
    int64_t min_size = INT64_MAX, min_align = INT64_MAX, min_length = INT64_MAX, sum_size = 0, max_size = INT64_MIN;
    int64_t max_align = INT64_MIN, max_last = INT64_MIN, min_first = INT64_MAX;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t f = data[0][i], l = data[1][i], s = data[2][i], a = data[3][i], length;
        if (__builtin_sub_overflow(l, f, &length) || __builtin_add_overflow(sum_size, s, &sum_size)) goto none;
        if (s < min_size) min_size = s;
        if (s > max_size) max_size = s;
        if (a < min_align) min_align = a;
        if (a > max_align) max_align = a;
        if (length < min_length) min_length = length;
        if (l > max_last) max_last = l;
        if (f < min_first) min_first = f;
    }
    result = Py_BuildValue("(OOOOLLLLLLLL)", arrays[0], arrays[1], arrays[2], arrays[3], (long long)min_size,
                           (long long)min_align, (long long)min_length, (long long)sum_size, (long long)max_size,
                           (long long)max_align, (long long)max_last, (long long)min_first);
    goto done;
none:
    result = Py_None;
    Py_INCREF(result);
done:
    for (int c = 0; c < 4; c++) Py_XDECREF(arrays[c]);
    return result;
}

/* offsets_dict(ids, off) -> {ids[i]: off[i]}, in order, sized once: planner.Placement.offsets */
static PyObject *native_offsets_dict(PyObject *self, PyObject *args) {
    PyObject *ids, *off;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &ids, &PyList_Type, &off)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(ids);
    if (PyList_GET_SIZE(off) != n) {
        PyErr_SetString(PyExc_ValueError, "offsets_dict: lists of different lengths");
        return NULL;
    }
    PyObject *d = _PyDict_NewPresized(n);
    if (!d) return NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyDict_SetItem(d, PyList_GET_ITEM(ids, i), PyList_GET_ITEM(off, i)) < 0) {
            Py_DECREF(d);
            return NULL;
        }
    return d;
}

/* ---- The exact search (planner._Search), whole: an iterative depth-first search that can pause ----
 *
 * exact_search(arrays, capacity, heuristic) -> capsule; exact_resume(capsule, pause_at) -> (status, nodes, work,
 * solution or None). ``arrays`` are _Frame.static64() (size, align, lo, hi, width, area, adj_ptr, adj_idx, mem_ptr,
 * mem_idx, total, cuts) and the search's first mo and wit, all copied. The recursion of _search / _place_next /
 * _subsolve becomes a stack of frames, each a state (phase) of one generator of the Python search; a resume runs
 * until a search node is entered with work >= pause_at (where _search yields) or the search ends. Both searches
 * make the same placements in the same order and count the same nodes and work; the sections an item watches
 * are kept in insertion order (a linked list per item, like the Python dicts). Items of a node are ranks into
 * its partition's static order (pre), kept on a stack arena: a child takes its parent's ranks but the one
 * placed, swapped to the end. */

enum { EX_FOUND = 0, EX_NOT_FOUND = 1, EX_PAUSED = 2, EX_GO = 3 };      /* planner._FOUND, _NOT_FOUND, _PAUSED */
enum { PH_ENTER, PH_NODE, PH_NEXT, PH_BACK, PH_SPLIT };                  /* what a frame does when on top */
#define XS_INPUTS 14

typedef struct {
    int64_t *a;
    Py_ssize_t n, cap;
} vec_t;

/* Room for ``extra`` more values (MemoryError set on failure). */
static int vec_grow(vec_t *v, Py_ssize_t extra) {
    if (v->n + extra <= v->cap) return 0;
    Py_ssize_t cap = v->cap ? v->cap : 256;
    while (cap < v->n + extra) cap *= 2;
    int64_t *a = (int64_t *)realloc(v->a, sizeof(int64_t) * (size_t)cap);
    if (!a) {
        PyErr_NoMemory();
        return -1;
    }
    v->a = a;
    v->cap = cap;
    return 0;
}

/* One generator of the Python search: a node of _search (phases ENTER..BACK) or a split of _place_next. The
 * node's items are arena[ranks .. ranks + cnt), ranks into arena[pre .. pre + scale). */
typedef struct {
    int phase, waiting;                  /* waiting: a split whose part is being solved */
    Py_ssize_t mark, pre, scale, ranks, cnt; /* mark: the arena's top when pushed (popped back to it) */
    int64_t lo, hi, start;
    Py_ssize_t cand, ncand, next;        /* node: its candidate keys on the arena */
    int64_t work, b, key;                /* node: work not yet counted, the placement being explored */
    Py_ssize_t j, moves, trail;          /* node: where its rank was, undo marks */
    Py_ssize_t pts, npts, pidx;          /* split: the partition's borders on the arena, the next part */
} xframe_t;

typedef struct {
    Py_ssize_t m, sections, depth;
    int64_t capacity, nodes, work;
    int state, nkeys;                    /* state: EX_PAUSED while resumable, else the outcome; -1 broken */
    char keys[4];
    int64_t *size, *align, *lo, *hi, *width, *area, *adj_ptr, *adj_idx, *mem_ptr, *mem_idx, *total, *cuts, *mo, *wit;
    int64_t *off, *solution, *head, *tail, *nxt, *prv, *sortbuf, *block;
    vec_t arena, moves, trail;           /* moves: (item, old mo) pairs; trail: (section, old, new witness) */
    xframe_t *frames;
} xs_t;

static void watch_add(xs_t *s, int64_t w, int64_t sec) {
    s->prv[sec] = s->tail[w];
    s->nxt[sec] = -1;
    if (s->tail[w] >= 0)
        s->nxt[s->tail[w]] = sec;
    else
        s->head[w] = sec;
    s->tail[w] = sec;
}

static void watch_drop(xs_t *s, int64_t w, int64_t sec) {
    int64_t p = s->prv[sec], n = s->nxt[sec];
    if (p >= 0)
        s->nxt[p] = n;
    else
        s->head[w] = n;
    if (n >= 0)
        s->prv[n] = p;
    else
        s->tail[w] = p;
}

static int cmp_key5(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    for (int k = 0; k < 5; k++)
        if (x[k] != y[k]) return x[k] < y[k] ? -1 : 1;
    return 0;
}

/* _Search._preorder: sort items (in place) by the heuristic's keys, ties by item. */
static void xs_preorder(xs_t *s, int64_t *items, Py_ssize_t n) {
    int64_t lo = s->lo[items[0]], hi = s->hi[items[0]];
    for (Py_ssize_t q = 1; q < n; q++) {
        if (s->lo[items[q]] < lo) lo = s->lo[items[q]];
        if (s->hi[items[q]] > hi) hi = s->hi[items[q]];
    }
    s->work += (hi - lo) * bitlen(hi - lo > 1 ? hi - lo : 1) + 12 * (int64_t)n;
    int64_t *keys = s->sortbuf;
    for (Py_ssize_t q = 0; q < n; q++) {
        int64_t k = items[q], peak = s->total[s->lo[k]], *key = keys + 5 * q;
        for (int64_t sec = s->lo[k] + 1; sec < s->hi[k]; sec++)
            if (s->total[sec] > peak) peak = s->total[sec];
        for (int c = 0; c < 4; c++) {
            char l = c < s->nkeys ? s->keys[c] : 0;
            key[c] = l == 'T' ? -peak : l == 'W' ? -s->width[k] : l == 'A' ? -s->area[k] : l == 'Z' ? -s->size[k] : 0;
        }
        key[4] = k;
    }
    qsort(keys, (size_t)n, 5 * sizeof(int64_t), cmp_key5);
    for (Py_ssize_t q = 0; q < n; q++) items[q] = keys[5 * q + 4];
}

/* _Search._subsolve: a partition's root node over the n items just above the arena's top (mark), ranked by
 * the heuristic; its ranks go above them. */
static int xs_subsolve(xs_t *s, Py_ssize_t mark, Py_ssize_t n, int64_t lo, int64_t hi) {
    if (vec_grow(&s->arena, 2 * n) < 0) return -1;
    xs_preorder(s, s->arena.a + mark, n);
    for (Py_ssize_t q = 0; q < n; q++) s->arena.a[mark + n + q] = q;
    s->arena.n = mark + 2 * n;
    xframe_t *f = &s->frames[s->depth++];
    memset(f, 0, sizeof *f);
    f->phase = PH_ENTER;
    f->mark = f->pre = mark;
    f->scale = f->cnt = n;
    f->ranks = mark + n;
    f->lo = lo;
    f->hi = hi;
    return EX_GO;
}

/* _Search._search on entry (after the pause): count the node, list its candidates (_Search._candidates). */
static int xs_node(xs_t *s, xframe_t *f) {
    s->nodes++;
    if (f->cnt == 0) return EX_FOUND;
    f->work = 20 + f->cnt;
    if (vec_grow(&s->arena, f->cnt) < 0) return -1;
    const int64_t *pre = s->arena.a + f->pre, *ranks = s->arena.a + f->ranks;
    int64_t *out = s->arena.a + s->arena.n, top = s->total[f->lo], min_height = INT64_MAX;
    for (int64_t sec = f->lo + 1; sec < f->hi; sec++)
        if (s->total[sec] > top) top = s->total[sec];
    for (Py_ssize_t q = 0; q < f->cnt; q++) {
        int64_t i = pre[ranks[q]];
        if (s->mo[i] + s->size[i] < min_height) min_height = s->mo[i] + s->size[i];
    }
    Py_ssize_t n = 0;
    for (Py_ssize_t q = 0; q < f->cnt; q++) {
        int64_t o = s->mo[pre[ranks[q]]], key = o * f->scale + ranks[q];
        if (key >= f->start && o <= s->capacity - top && o < min_height) out[n++] = key;
    }
    qsort(out, (size_t)n, sizeof(int64_t), cmp_i64);
    f->cand = s->arena.n;
    f->ncand = n;
    f->next = 0;
    s->arena.n += n;
    f->phase = PH_NEXT;
    return EX_GO;
}

/* _Search._rewatch after placing b (the items raised are moves[mark::2]; k < mark stands for b itself):
 * 1 feasible, 0 not, -1 error. */
static int xs_rewatch(xs_t *s, int64_t b, Py_ssize_t mark, int64_t *seen) {
    for (Py_ssize_t k = mark - 2; k < s->moves.n; k += 2) {
        int64_t x = k < mark ? b : s->moves.a[k], mx = s->mo[x], next;
        for (int64_t sec = s->head[x]; sec >= 0; sec = next) {
            next = s->nxt[sec];
            int64_t limit = s->capacity - s->total[sec], found = -1;
            if (x != b && mx <= limit) continue;
            int pending = 0;
            *seen += s->mem_ptr[sec + 1] - s->mem_ptr[sec];
            for (int64_t q = s->mem_ptr[sec]; q < s->mem_ptr[sec + 1]; q++) {
                int64_t y = s->mem_idx[q];
                if (s->off[y] >= 0) continue;
                if (s->mo[y] <= limit) {
                    found = y;
                    break;
                }
                pending = 1;
            }
            if (found < 0 && pending) return 0;
            if (vec_grow(&s->trail, 3) < 0) return -1;
            int64_t *t = s->trail.a + s->trail.n;
            t[0] = sec, t[1] = x, t[2] = found;
            s->trail.n += 3;
            watch_drop(s, x, sec);
            s->wit[sec] = found;
            if (found >= 0) watch_add(s, found, sec);
        }
    }
    return 1;
}

/* _Search._place: raise b's unplaced neighbours, take b's size off its sections, rewatch (1, 0 or -1). */
static int xs_place(xs_t *s, int64_t b, int64_t o, int64_t *seen) {
    Py_ssize_t mark = s->moves.n;
    int64_t h = o + s->size[b];
    int ok = 1;
    s->off[b] = o;
    for (int64_t q = s->adj_ptr[b]; q < s->adj_ptr[b + 1] && ok; q++) {
        int64_t x = s->adj_idx[q];
        if (s->off[x] >= 0 || s->mo[x] >= h) continue;
        if (vec_grow(&s->moves, 2) < 0) return -1;
        s->moves.a[s->moves.n++] = x;
        s->moves.a[s->moves.n++] = s->mo[x];
        s->mo[x] = align_up(h, s->align[x]);
        ok = s->mo[x] + s->size[x] <= s->capacity;
    }
    for (int64_t sec = s->lo[b]; sec < s->hi[b]; sec++) s->total[sec] -= s->size[b];
    return ok ? xs_rewatch(s, b, mark, seen) : 0;
}

/* _Search._unplace back to the undo marks. */
static void xs_undo(xs_t *s, int64_t b, Py_ssize_t moves, Py_ssize_t trail) {
    for (Py_ssize_t k = s->trail.n - 3; k >= trail; k -= 3) {
        int64_t sec = s->trail.a[k], w = s->trail.a[k + 1], nw = s->trail.a[k + 2];
        s->wit[sec] = w;
        if (nw >= 0) watch_drop(s, nw, sec);
        watch_add(s, w, sec);
    }
    s->trail.n = trail;
    for (int64_t sec = s->lo[b]; sec < s->hi[b]; sec++) s->total[sec] += s->size[b];
    for (Py_ssize_t k = s->moves.n - 2; k >= moves; k -= 2) s->mo[s->moves.a[k]] = s->moves.a[k + 1];
    s->moves.n = moves;
    s->off[b] = -1;
}

/* _Search._place_next after placing f->b: the child takes the node's ranks but b's (swapped to the end); if b
 * emptied cuts, a split frame solves the parts in turn, else a child node goes on from b's key. */
static int xs_descend(xs_t *s, xframe_t *f) {
    int64_t *ranks = s->arena.a + f->ranks, r = f->key % f->scale, b = f->b;
    Py_ssize_t j = 0, n = f->cnt - 1;
    while (ranks[j] != r) j++;
    ranks[j] = ranks[n];
    ranks[n] = r;
    f->j = j;
    f->phase = PH_BACK;
    s->solution[b] = s->off[b];
    Py_ssize_t mark = s->arena.n, npts = 1;
    if (vec_grow(&s->arena, s->hi[b] - s->lo[b] + 1) < 0) return -1;
    int64_t *pts = s->arena.a + mark;
    pts[0] = f->lo;
    for (int64_t sec = s->lo[b]; sec < s->hi[b] - 1; sec++)
        if (--s->cuts[sec] == 0) pts[npts++] = sec + 1;
    xframe_t *c = &s->frames[s->depth++];
    memset(c, 0, sizeof *c);
    c->pre = f->pre, c->scale = f->scale, c->ranks = f->ranks, c->cnt = n, c->lo = f->lo, c->hi = f->hi;
    c->mark = mark;
    if (npts == 1) {
        c->phase = PH_ENTER;
        c->start = f->key;
        return EX_GO;
    }
    pts[npts++] = f->hi;
    s->work += (int64_t)n * npts;
    s->arena.n = mark + npts;
    c->phase = PH_SPLIT;
    c->pts = mark;
    c->npts = npts;
    return EX_GO;
}

/* _Search._search's loop: try the node's next candidates until one places (then descend) or none is left. */
static int xs_next(xs_t *s, xframe_t *f) {
    while (f->next < f->ncand) {
        int64_t key = s->arena.a[f->cand + f->next++], seen = 0;
        int64_t o = key / f->scale, b = s->arena.a[f->pre + key % f->scale];
        f->work += 10 + s->adj_ptr[b + 1] - s->adj_ptr[b] + s->hi[b] - s->lo[b];
        f->moves = s->moves.n;
        f->trail = s->trail.n;
        int ok = xs_place(s, b, o, &seen);
        if (ok < 0) return -1;
        f->work += seen;
        if (ok) {
            s->work += f->work;
            f->work = 0;
            f->b = b;
            f->key = key;
            return xs_descend(s, f);
        }
        xs_undo(s, b, f->moves, f->trail);
    }
    s->work += f->work;
    return EX_NOT_FOUND;
}

/* Back in a node from its child (status ret): restore the cuts and the ranks, take b back. */
static int xs_back(xs_t *s, xframe_t *f, int ret) {
    int64_t b = f->b, *ranks = s->arena.a + f->ranks;
    for (int64_t sec = s->lo[b]; sec < s->hi[b] - 1; sec++) s->cuts[sec]++;
    int64_t r = ranks[f->cnt - 1];
    ranks[f->cnt - 1] = ranks[f->j];
    ranks[f->j] = r;
    xs_undo(s, b, f->moves, f->trail);
    if (ret == EX_FOUND) return EX_FOUND;
    f->phase = PH_NEXT;
    return EX_GO;
}

/* _Place_next's split: solve the next non-empty part (its items among the node's) after a part was found. */
static int xs_split(xs_t *s, xframe_t *f, int ret) {
    if (f->waiting && ret != EX_FOUND) return ret;
    f->waiting = 0;
    while (f->pidx + 1 < f->npts) {
        int64_t a = s->arena.a[f->pts + f->pidx], z = s->arena.a[f->pts + f->pidx + 1];
        f->pidx++;
        Py_ssize_t mark = s->arena.n, n = 0;
        if (vec_grow(&s->arena, f->cnt) < 0) return -1;
        const int64_t *pre = s->arena.a + f->pre, *ranks = s->arena.a + f->ranks;
        int64_t *part = s->arena.a + mark;
        for (Py_ssize_t q = 0; q < f->cnt; q++) {
            int64_t k = pre[ranks[q]];
            if (s->lo[k] < z && a < s->hi[k]) part[n++] = k;
        }
        if (n) {
            f->waiting = 1;
            return xs_subsolve(s, mark, n, a, z);
        }
    }
    return EX_FOUND;
}

/* Run until a node is entered with work >= pause_at (EX_PAUSED) or the search ends (its status); -1 error. */
static int xs_run(xs_t *s, int64_t pause_at) {
    int ret = EX_NOT_FOUND;
    while (s->depth > 0) {
        xframe_t *f = &s->frames[s->depth - 1];
        int rc;
        switch (f->phase) {
        case PH_ENTER:
            if (s->work >= pause_at) {
                f->phase = PH_NODE;
                return EX_PAUSED;
            }
            /* fall through */
        case PH_NODE:
            rc = xs_node(s, f);
            break;
        case PH_NEXT:
            rc = xs_next(s, f);
            break;
        case PH_BACK:
            rc = xs_back(s, f, ret);
            break;
        default:
            rc = xs_split(s, f, ret);
        }
        if (rc < 0) return -1;
        if (rc != EX_GO) {
            s->arena.n = f->mark;
            s->depth--;
            ret = rc;
        }
    }
    return ret;
}

#define EXACT_CAPSULE "rulepass.exact_search"

static void xs_free(xs_t *s) {
    free(s->block);
    free(s->arena.a);
    free(s->moves.a);
    free(s->trail.a);
    free(s->frames);
    free(s);
}

static void exact_search_free(PyObject *capsule) {
    xs_t *s = (xs_t *)PyCapsule_GetPointer(capsule, EXACT_CAPSULE);
    if (s) xs_free(s);
}

/* Whether every value of a[0..n) lies in [lo, hi). */
static int all_in(const int64_t *a, Py_ssize_t n, int64_t lo, int64_t hi) {
    for (Py_ssize_t k = 0; k < n; k++)
        if (a[k] < lo || a[k] >= hi) return 0;
    return 1;
}

/* Whether a CSR pointer array (n + 1 of them) runs from 0 to len, never decreasing. */
static int csr_ok(const int64_t *ptr, Py_ssize_t n, Py_ssize_t len) {
    for (Py_ssize_t k = 0; k < n; k++)
        if (ptr[k] > ptr[k + 1]) return 0;
    return ptr[0] == 0 && ptr[n] == len;
}

/* Whether the copied arrays (of lengths len) have the shapes and index ranges the search relies on. */
static int xs_valid(const xs_t *s, const Py_ssize_t *len) {
    Py_ssize_t m = s->m, secs = s->sections;
    for (int k = 1; k < 6; k++)
        if (len[k] != m) return 0;
    if (len[12] != m || len[6] != m + 1 || len[8] != secs + 1 || len[11] != (secs ? secs - 1 : 0) || len[13] != secs)
        return 0;
    if (!csr_ok(s->adj_ptr, m, len[7]) || !csr_ok(s->mem_ptr, secs, len[9])) return 0;
    return all_in(s->adj_idx, len[7], 0, m) && all_in(s->mem_idx, len[9], 0, m) && all_in(s->lo, m, 0, secs) &&
           all_in(s->hi, m, 1, secs + 1) && all_in(s->wit, secs, 0, m) && all_in(s->align, m, 1, INT64_MAX);
}

/* Copy the input arrays (borrowed in v) into one block, with room for the search's own arrays; check them. */
static int xs_copy(xs_t *s, Py_buffer *v) {
    Py_ssize_t len[XS_INPUTS], all = 0, m = v[0].len / 8, secs = v[10].len / 8;
    for (int k = 0; k < XS_INPUTS; k++) all += len[k] = v[k].len / 8;
    Py_ssize_t own[7] = {m, m, m, m, secs, secs, 5 * m};
    s->block = (int64_t *)malloc(sizeof(int64_t) * (size_t)(all + 9 * m + 2 * secs + 1));
    if (!s->block) {
        PyErr_NoMemory();
        return -1;
    }
    int64_t **in[XS_INPUTS] = {&s->size, &s->align,   &s->lo,    &s->hi,    &s->width, &s->area, &s->adj_ptr,
                               &s->adj_idx, &s->mem_ptr, &s->mem_idx, &s->total, &s->cuts, &s->mo,   &s->wit};
    int64_t **mine[7] = {&s->off, &s->solution, &s->head, &s->tail, &s->nxt, &s->prv, &s->sortbuf};
    int64_t *at = s->block;
    for (int k = 0; k < XS_INPUTS; at += len[k++]) memcpy(*in[k] = at, v[k].buf, sizeof(int64_t) * (size_t)len[k]);
    for (int k = 0; k < 7; at += own[k++]) *mine[k] = at;
    s->m = m;
    s->sections = secs;
    if (!xs_valid(s, len)) {
        PyErr_SetString(PyExc_ValueError, "exact_search: inconsistent arrays");
        return -1;
    }
    return 0;
}

/* Set up the search (as _Search.__init__ and solve's call of _subsolve over every item). */
static int xs_init(xs_t *s, PyObject *arrays) {
    Py_buffer v[XS_INPUTS];
    PyObject *objs[XS_INPUTS];
    const char *names[XS_INPUTS];
    if (!PyTuple_Check(arrays) || PyTuple_GET_SIZE(arrays) != XS_INPUTS) {
        PyErr_SetString(PyExc_TypeError, "exact_search: expected a tuple of 14 arrays");
        return -1;
    }
    for (int k = 0; k < XS_INPUTS; k++) objs[k] = PyTuple_GET_ITEM(arrays, k), names[k] = "exact_search";
    int got = get_all(objs, v, XS_INPUTS, names, -1);
    int rc = got == XS_INPUTS ? xs_copy(s, v) : -1;
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    if (rc < 0) return -1;
    for (Py_ssize_t k = 0; k < s->m; k++) s->off[k] = s->solution[k] = s->head[k] = s->tail[k] = -1;
    for (Py_ssize_t sec = 0; sec < s->sections; sec++) watch_add(s, s->wit[sec], sec);
    /* every frame but the top one is a node with a placement or a split above one: at most 2m + 1 */
    s->frames = (xframe_t *)malloc(sizeof(xframe_t) * (size_t)(2 * s->m + 2));
    if (!s->frames || vec_grow(&s->arena, s->m) < 0) {
        if (!s->frames) PyErr_NoMemory();
        return -1;
    }
    s->state = EX_PAUSED;
    if (s->m == 0) return s->state = EX_FOUND, 0;
    for (Py_ssize_t k = 0; k < s->m; k++) s->arena.a[k] = k;
    return xs_subsolve(s, 0, s->m, 0, s->sections) < 0 ? -1 : 0;
}

/* exact_search(arrays, capacity, heuristic) -> capsule: a paused search (see above). */
static PyObject *native_exact_search(PyObject *self, PyObject *args) {
    PyObject *arrays;
    long long capacity;
    const char *heuristic;
    if (!PyArg_ParseTuple(args, "O!Ls", &PyTuple_Type, &arrays, &capacity, &heuristic)) return NULL;
    size_t nkeys = strlen(heuristic);
    if (nkeys > 4 || strspn(heuristic, "TWAZ") != nkeys) {
        PyErr_SetString(PyExc_ValueError, "exact_search: the heuristic is up to 4 of the letters T, W, A, Z");
        return NULL;
    }
    xs_t *s = (xs_t *)calloc(1, sizeof(xs_t));
    if (!s) return PyErr_NoMemory();
    s->capacity = capacity;
    s->nkeys = (int)nkeys;
    memcpy(s->keys, heuristic, nkeys);
    PyObject *capsule = xs_init(s, arrays) < 0 ? NULL : PyCapsule_New(s, EXACT_CAPSULE, exact_search_free);
    if (!capsule) xs_free(s);
    return capsule;
}

/* exact_resume(capsule, pause_at) -> (status, nodes, work, solution or None): run on until the next pause. */
static PyObject *native_exact_resume(PyObject *self, PyObject *args) {
    PyObject *capsule;
    long long pause_at;
    if (!PyArg_ParseTuple(args, "OL", &capsule, &pause_at)) return NULL;
    xs_t *s = (xs_t *)PyCapsule_GetPointer(capsule, EXACT_CAPSULE);
    if (!s) return NULL;
    if (s->state < 0) {
        PyErr_SetString(PyExc_RuntimeError, "exact_resume: the search failed earlier");
        return NULL;
    }
    if (s->state == EX_PAUSED) s->state = xs_run(s, pause_at);
    if (s->state < 0) return NULL;
    long long nodes = s->nodes, work = s->work;
    if (s->state != EX_FOUND) return Py_BuildValue("(iLLO)", s->state, nodes, work, Py_None);
    PyObject *solution = PyList_New(s->m);
    for (Py_ssize_t k = 0; solution && k < s->m; k++) {
        PyObject *o = PyLong_FromLongLong(s->solution[k]);
        if (!o) Py_CLEAR(solution);
        else PyList_SET_ITEM(solution, k, o);
    }
    if (!solution) return NULL;
    return Py_BuildValue("(iLLN)", s->state, nodes, work, solution);
}

/* ---- planner._split_sweep's second phase ---- */

typedef struct {
    int64_t key, val;
} kv_t; /* a (key, value) pair of a min-heap ordered by key */

static void kv_push(kv_t *h, Py_ssize_t *n, int64_t key, int64_t val) {
    Py_ssize_t k = (*n)++;
    while (k && h[(k - 1) / 2].key > key) {
        h[k] = h[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    h[k].key = key;
    h[k].val = val;
}

static void kv_pop(kv_t *h, Py_ssize_t *n) {
    kv_t last = h[--(*n)];
    Py_ssize_t k = 0, m = *n;
    for (;;) {
        Py_ssize_t c = 2 * k + 1;
        if (c >= m) break;
        if (c + 1 < m && h[c + 1].key < h[c].key) c++;
        if (h[c].key >= last.key) break;
        h[k] = h[c];
        k = c;
    }
    if (m) h[k] = last;
}

/* index of the first range of the ascending, disjoint ranges whose start is >= lo */
static Py_ssize_t range_at(const range_t *r, Py_ssize_t n, int64_t lo) {
    Py_ssize_t a = 0, z = n;
    while (a < z) {
        Py_ssize_t mid = (a + z) / 2;
        if (r[mid].lo < lo)
            a = mid + 1;
        else
            z = mid;
    }
    return a;
}

typedef struct {
    kv_t *tops, *expiry;
    range_t *live;
    Py_ssize_t ntops, nexpiry, nlive;
} split_t;

/* Place short-lived item b at or above the highest end of the long-lived items reached (planner._split_sweep) */
static int64_t split_one(split_t *w, int64_t b, const int64_t *first, const int64_t *last, const int64_t *size,
                         const int64_t *align, int64_t base, int best_fit) {
    while (w->ntops && w->tops[0].val < first[b]) kv_pop(w->tops, &w->ntops);
    while (w->nexpiry && w->expiry[0].key < first[b]) {
        Py_ssize_t j = range_at(w->live, w->nlive, w->expiry[0].val);
        memmove(w->live + j, w->live + j + 1, sizeof(range_t) * (size_t)(w->nlive - j - 1));
        w->nlive--;
        kv_pop(w->expiry, &w->nexpiry);
    }
    int64_t floor = w->ntops && -w->tops[0].key > base ? -w->tops[0].key : base;
    int64_t x = lowest_fit(w->live, w->nlive, NULL, 0, size[b], align[b], floor, best_fit);
    Py_ssize_t j = range_at(w->live, w->nlive, x);
    memmove(w->live + j + 1, w->live + j, sizeof(range_t) * (size_t)(w->nlive - j));
    w->live[j].lo = x;
    w->live[j].hi = x + size[b];
    w->nlive++;
    kv_push(w->expiry, &w->nexpiry, last[b], x);
    return x;
}

static PyObject *native_split_place(PyObject *self, PyObject *args) {
    PyObject *o[7];
    long long base;
    int best_fit;
    if (!PyArg_ParseTuple(args, "OOOOOOOLp", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &base, &best_fit))
        return NULL;
    Py_buffer v[7];
    const char *names[7] = {"short", "long", "first", "last", "size", "align", "off"};
    int got = get_all(o, v, 7, names, 6);
    PyObject *result = NULL;
    split_t w = {NULL, NULL, NULL, 0, 0, 0};
    if (got < 7) goto done;
    const int64_t *shrt = v[0].buf, *lng = v[1].buf, *first = v[2].buf, *last = v[3].buf, *size = v[4].buf;
    const int64_t *align = v[5].buf;
    int64_t *off = v[6].buf;
    Py_ssize_t ns = v[0].len / 8, nl = v[1].len / 8, n = v[2].len / 8;
    if (v[3].len / 8 != n || v[4].len / 8 != n || v[5].len / 8 != n || v[6].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "split_place: arrays of different lengths");
        goto done;
    }
    for (Py_ssize_t k = 0; k < ns + nl; k++) {
        int64_t b = k < ns ? shrt[k] : lng[k - ns];
        if (b < 0 || b >= n || size[b] <= 0 || (k >= ns && off[b] < 0)) {
            PyErr_SetString(PyExc_ValueError, "split_place: item out of range, of no size or long and unplaced");
            goto done;
        }
    }
    w.tops = (kv_t *)malloc(sizeof(kv_t) * (size_t)(nl + 1));
    w.expiry = (kv_t *)malloc(sizeof(kv_t) * (size_t)(ns + 1));
    w.live = (range_t *)malloc(sizeof(range_t) * (size_t)(ns + 1));
    if (!w.tops || !w.expiry || !w.live) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t height = base;
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < ns; i++) {
        int64_t b = shrt[i];
        for (; k < nl && first[lng[k]] <= last[b]; k++)
            kv_push(w.tops, &w.ntops, -(off[lng[k]] + size[lng[k]]), last[lng[k]]);
        off[b] = split_one(&w, b, first, last, size, align, base, best_fit);
        if (off[b] + size[b] > height) height = off[b] + size[b];
    }
    result = PyLong_FromLongLong(height);
done:
    free(w.tops);
    free(w.expiry);
    free(w.live);
    for (int j = 0; j < got; j++) PyBuffer_Release(&v[j]);
    return result;
}

/* ---- planner._live_max ---- */

static Py_ssize_t step_index(const int64_t *times, Py_ssize_t n, int64_t t) {
    Py_ssize_t a = 0, z = n;
    while (a < z) {
        Py_ssize_t mid = (a + z) / 2;
        if (times[mid] < t)
            a = mid + 1;
        else
            z = mid;
    }
    return a;
}

/* the live total after each distinct event step (times ascending, *nt of them), from m items' events */
static void live_profile(const int64_t *items, Py_ssize_t m, const int64_t *first, const int64_t *last,
                         const int64_t *size, uint64_t *step, int64_t *delta, uint64_t *tk, int64_t *tv,
                         int64_t *times, int64_t *profile, Py_ssize_t *nt) {
    for (Py_ssize_t k = 0; k < m; k++) {
        step[2 * k] = (uint64_t)first[items[k]] ^ SIGN_BIT;
        delta[2 * k] = size[items[k]];
        step[2 * k + 1] = (uint64_t)(last[items[k]] + 1) ^ SIGN_BIT;
        delta[2 * k + 1] = -size[items[k]];
    }
    radix_pairs(step, delta, tk, tv, 2 * m);
    int64_t live = 0;
    *nt = 0;
    for (Py_ssize_t k = 0; k < 2 * m; k++) {
        live += delta[k];
        if (k + 1 == 2 * m || step[k + 1] != step[k]) {
            times[*nt] = (int64_t)(step[k] ^ SIGN_BIT);
            profile[(*nt)++] = live;
        }
    }
}

/* live_max(items, first, last, size) -> array: planner._live_max (a max segment tree over the profile) */
static PyObject *native_live_max(PyObject *self, PyObject *args) {
    PyObject *o[4];
    if (!PyArg_ParseTuple(args, "OOOO", &o[0], &o[1], &o[2], &o[3])) return NULL;
    Py_buffer v[4];
    const char *names[4] = {"items", "first", "last", "size"};
    int got = get_all(o, v, 4, names, -1);
    PyObject *result = NULL;
    uint64_t *step = NULL, *tk = NULL;
    int64_t *delta = NULL, *tv = NULL, *times = NULL, *tree = NULL;
    if (got < 4) goto done;
    const int64_t *items = v[0].buf, *first = v[1].buf, *last = v[2].buf, *size = v[3].buf;
    Py_ssize_t m = v[0].len / 8, n = v[1].len / 8;
    if (v[2].len / 8 != n || v[3].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "live_max: arrays of different lengths");
        goto done;
    }
    if (check_items(items, m, n, "live_max") < 0) goto done;
    Py_ssize_t leaves = 1;
    while (leaves < 2 * m) leaves *= 2;
    size_t bytes = sizeof(int64_t) * (size_t)(2 * m + 1);
    step = malloc(bytes), tk = malloc(bytes), delta = malloc(bytes), tv = malloc(bytes), times = malloc(bytes);
    tree = calloc((size_t)(2 * leaves), sizeof(int64_t));
    int64_t *out;
    if (!step || !tk || !delta || !tv || !times || !tree || !(result = new_i64_array(m, &out))) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t nt;
    live_profile(items, m, first, last, size, step, delta, tk, tv, times, tree + leaves, &nt);
    for (Py_ssize_t k = leaves - 1; k > 0; k--) tree[k] = tree[2 * k] > tree[2 * k + 1] ? tree[2 * k] : tree[2 * k + 1];
    for (Py_ssize_t k = 0; k < m; k++) {
        Py_ssize_t lo = step_index(times, nt, first[items[k]]) + leaves;
        Py_ssize_t hi = step_index(times, nt, last[items[k]] + 1) + leaves; /* max over [lo, hi) */
        int64_t best = INT64_MIN;
        for (; lo < hi; lo >>= 1, hi >>= 1) {
            if (lo & 1) best = tree[lo] > best ? tree[lo] : best, lo++;
            if (hi & 1) --hi, best = tree[hi] > best ? tree[hi] : best;
        }
        out[k] = best;
    }
done:
    free(step);
    free(tk);
    free(delta);
    free(tv);
    free(times);
    free(tree);
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    return result;
}

/* derive(kind, a, b, n) -> array: a key column for planner._Orders._column. kind "length": a - b + 1 (a: last,
 * b: first); "product": a * b (OverflowError past int64, as array('q') raises); "diff": a[i + 1] - a[i] (a CSR's
 * list lengths; b unused); "scatter": n zeros with out[a[k]] = b[k]. */
static PyObject *native_derive(PyObject *self, PyObject *args) {
    const char *kind;
    PyObject *o[2];
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "sOOn", &kind, &o[0], &o[1], &n)) return NULL;
    Py_buffer v[2];
    const char *names[2] = {"a", "b"};
    int got = get_all(o, v, 2, names, -1);
    PyObject *result = NULL;
    if (got < 2) goto done;
    const int64_t *a = v[0].buf, *b = v[1].buf;
    Py_ssize_t na = v[0].len / 8, nb = v[1].len / 8;
    int scatter = !strcmp(kind, "scatter"), diff = !strcmp(kind, "diff"), product = !strcmp(kind, "product");
    if (!scatter && !diff && !product && strcmp(kind, "length")) {
        PyErr_Format(PyExc_ValueError, "derive: unknown kind %s", kind);
        goto done;
    }
    if (!diff && na != nb) {
        PyErr_SetString(PyExc_ValueError, "derive: arrays of different lengths");
        goto done;
    }
    Py_ssize_t m = scatter ? n : diff ? (na ? na - 1 : 0) : na;
    int64_t *out;
    if (m < 0 || !(result = new_i64_array(m, &out))) goto done;
    if (scatter && check_items(a, na, n, "derive") < 0) {
        Py_CLEAR(result);
        goto done;
    }
    for (Py_ssize_t k = 0; k < na && scatter; k++) out[a[k]] = b[k];
    for (Py_ssize_t k = 0; k < m && !scatter; k++) {
        if (diff)
            out[k] = a[k + 1] - a[k];
        else if (!product)
            out[k] = a[k] - b[k] + 1;
        else if (__builtin_mul_overflow(a[k], b[k], &out[k])) {
            PyErr_SetString(PyExc_OverflowError, "derive: product past int64");
            Py_CLEAR(result);
            goto done;
        }
    }
done:
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    return result;
}

/* fields(objects, names) -> tuple of lists: [getattr(o, name) for o in objects] for each name (planner._Arrays:
 * one pass over the objects, not one a field). */
static PyObject *native_fields(PyObject *self, PyObject *args) {
    PyObject *objs, *names;
    if (!PyArg_ParseTuple(args, "OO!", &objs, &PyTuple_Type, &names)) return NULL;
    PyObject *fast = PySequence_Fast(objs, "fields: a sequence of objects");
    if (!fast) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast), k = PyTuple_GET_SIZE(names);
    PyObject **items = PySequence_Fast_ITEMS(fast);
    PyObject *result = PyTuple_New(k);
    if (!result) goto fail;
    for (Py_ssize_t c = 0; c < k; c++) {
        PyObject *list = PyList_New(n);
        if (!list) goto fail;
        PyTuple_SET_ITEM(result, c, list);
    }
    for (Py_ssize_t i = 0; i < n; i++)
        for (Py_ssize_t c = 0; c < k; c++) {
            PyObject *value = PyObject_GetAttr(items[i], PyTuple_GET_ITEM(names, c));
            if (!value) goto fail;
            PyList_SET_ITEM(PyTuple_GET_ITEM(result, c), i, value);
        }
    Py_DECREF(fast);
    return result;
fail:
    Py_XDECREF(result);
    Py_DECREF(fast);
    return NULL;
}

static PyMethodDef methods[] = {
    {"fields", native_fields, METH_VARARGS, "Attribute columns of a sequence of objects (see planner._Arrays)."},
    {"derive", native_derive, METH_VARARGS, "A derived key column (see planner._Orders._column)."},
    {"live_max", native_live_max, METH_VARARGS, "The largest live total in each item's lifetime (planner._live_max)."},
    {"split_place", native_split_place, METH_VARARGS, "The short-lived phase of planner._split_sweep."},
    {"exact_search", native_exact_search, METH_VARARGS, "A paused exact search (see planner._Search)."},
    {"exact_resume", native_exact_resume, METH_VARARGS, "Run a paused exact search on to its next pause or end."},
    {"place_dense", native_place_dense, METH_VARARGS, "place() without neighbour lists, for dense inputs."},
    {"sweep", native_sweep, METH_VARARGS, "First or best fit in start order over the live gaps (see planner._sweep)."},
    {"sort_items", native_sort_items, METH_VARARGS, "Items sorted by key columns, ties by item (see planner._sorted)."},
    {"components", native_components, METH_VARARGS, "Time components and their spanning items (see planner._groups)."},
    {"ingest", native_ingest, METH_VARARGS, "The buffers' int64 arrays and bounds (see planner._Arrays)."},
    {"offsets_dict", native_offsets_dict, METH_VARARGS, "The plan's offsets by id, in input order."},
    {"peak", native_peak, METH_VARARGS, "Largest total size live at one step (see planner._peak)."},
    {"quick", native_quick, METH_VARARGS, "The quick try's orders, first fit, in one call (see planner._quick)."},
    {"count_pairs", native_count_pairs, METH_VARARGS, "Number of time-overlapping pairs (see planner._count_pairs)."},
    {"place", native_place, METH_VARARGS, "First or best fit of an order over neighbour lists (see planner.py)."},
    {"overlaps", native_overlaps, METH_VARARGS, "Neighbour lists (CSR) of time-overlapping items (see planner.py)."},
    {"start_order", native_start_order, METH_VARARGS, "A piece in start order (see planner._StartOrder)."},
    {"window", native_window, METH_VARARGS, "A repair window's members (see planner._StartOrder.window)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", "Native inner loops of the planner.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
