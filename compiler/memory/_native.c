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
 *   exact_search(arrays, capacity, heuristic) -> capsule   planner._Search's whole depth-first search, paused
 *   exact_resume(capsule, pause_at) -> (status, nodes, work, solution)   ... run on to its next pause or end
 *   start_order(by_start, off, first, last, size, leaves) -> (first, last, size, off, tops tree, lasts tree)
 *                                                          like planner._StartOrder's lists
 *   window(tree, first, last, off, size, inside, end, lo, hi) -> (movers, partial, spans)
 *                                                          like planner._StartOrder.window's members
 *
 * Every array is an int64 buffer (array.array('q')); ``off`` is written in place. The caller guarantees that
 * every value and every offset reached fits in int64 (planner._Arrays.native).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

static int cmp_start(const void *a, const void *b) {
    const start_t *x = (const start_t *)a, *y = (const start_t *)b;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    return (x->item > y->item) - (x->item < y->item);
}

static inline int64_t align_up(int64_t v, int64_t a) {
    if (a == 1) return v;
    int64_t r = v % a;
    if (r < 0) r += a;
    return r ? v + (a - r) : v;
}

/* planner._lowest_fit over the merge of two sorted obstacle lists (a buffer's neighbours and the static ranges),
 * walked lazily: first fit usually stops long before the end of the static ones. */
static int64_t lowest_fit(const range_t *x, Py_ssize_t nx, const range_t *y, Py_ssize_t ny, int64_t s, int64_t a,
                          int64_t base, int best_fit) {
    int64_t cand = align_up(base, a), best = -1, best_gap = 0;
    Py_ssize_t i = 0, j = 0;
    while (i < nx || j < ny) {
        const range_t *o = (j >= ny || (i < nx && x[i].lo <= y[j].lo)) ? &x[i++] : &y[j++];
        if (o->lo >= cand + s) {
            if (!best_fit) break;
            if (best < 0 || o->lo - cand < best_gap) {
                best = cand;
                best_gap = o->lo - cand;
            }
        }
        if (o->hi > cand) cand = align_up(o->hi, a);
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
    int64_t height = base;
    Py_BEGIN_ALLOW_THREADS;
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
    for (Py_ssize_t k = 0; k < n_items; k++)
        if (items[k] < 0 || items[k] >= n) {
            PyErr_SetString(PyExc_IndexError, "place_dense: item out of range");
            goto done;
        }
    for (Py_ssize_t k = 0; k < n_order; k++)
        if (order[k] < 0 || order[k] >= n) {
            PyErr_SetString(PyExc_IndexError, "place_dense: item out of range");
            goto done;
        }
    pl = (placed_t *)malloc(sizeof(placed_t) * (size_t)(n_items + n_order + 1));
    if (!pl) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t np = 0;
    for (Py_ssize_t k = 0; k < n_items; k++) {
        int64_t i = items[k];
        if (off[i] < 0) continue;
        placed_t t = {off[i], off[i] + size[i], first[i], last[i]};
        Py_ssize_t j = np++;
        while (j > 0 && pl[j - 1].lo > t.lo) {
            pl[j] = pl[j - 1];
            j--;
        }
        pl[j] = t;
    }
    int64_t height = base;
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t k = 0; k < n_order; k++) {
        int64_t b = order[k], s = size[b], a = align[b], f = first[b], l = last[b];
        int64_t cand = align_up(base, a), best = -1, best_gap = 0;
        for (Py_ssize_t q = 0; q < np; q++) {
            const placed_t *o = &pl[q];
            if (o->last < f || o->first > l) continue;
            if (o->lo >= cand + s) {
                if (!best_fit) break;
                if (best < 0 || o->lo - cand < best_gap) {
                    best = cand;
                    best_gap = o->lo - cand;
                }
            }
            if (o->hi > cand) cand = align_up(o->hi, a);
        }
        int64_t x = best_fit && best >= 0 ? best : cand;
        off[b] = x;
        placed_t t = {x, x + s, f, l};
        Py_ssize_t j = np++;
        while (j > 0 && pl[j - 1].lo > x) {
            pl[j] = pl[j - 1];
            j--;
        }
        pl[j] = t;
        if (x + s > height) {
            height = x + s;
            if (limit >= 0 && height >= limit) break;
        }
    }
    Py_END_ALLOW_THREADS;
    result = PyLong_FromLongLong(height);
done:
    free(pl);
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    return result;
}

static PyObject *new_i64_array(Py_ssize_t n, int64_t **data) {
    /* array.array('q', bytes(8 * n)) */
    static PyObject *array_type = NULL;
    if (!array_type) {
        PyObject *mod = PyImport_ImportModule("array");
        if (!mod) return NULL;
        array_type = PyObject_GetAttrString(mod, "array");
        Py_DECREF(mod);
        if (!array_type) return NULL;
    }
    PyObject *zeros = PyBytes_FromStringAndSize(NULL, n * 8);
    if (!zeros) return NULL;
    memset(PyBytes_AS_STRING(zeros), 0, (size_t)n * 8);
    PyObject *arr = PyObject_CallFunction(array_type, "sO", "q", zeros);
    Py_DECREF(zeros);
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

static PyObject *native_overlaps(PyObject *self, PyObject *args) {
    PyObject *o_items, *o_first, *o_last;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "OOOn", &o_items, &o_first, &o_last, &n)) return NULL;
    Py_buffer v[3];
    PyObject *objs[3] = {o_items, o_first, o_last};
    const char *names[3] = {"items", "first", "last"};
    int got = get_all(objs, v, 3, names, -1);
    PyObject *result = NULL, *a_ptr = NULL, *a_ind = NULL;
    start_t *starts = NULL;
    int64_t *live = NULL, *pairs = NULL, *fill = NULL;
    if (got < 3) goto done;
    const int64_t *items = v[0].buf, *first = v[1].buf, *last = v[2].buf;
    Py_ssize_t m = v[0].len / 8;
    if (v[1].len / 8 < n || v[2].len / 8 < n) {
        PyErr_SetString(PyExc_ValueError, "overlaps: arrays shorter than n");
        goto done;
    }
    for (Py_ssize_t k = 0; k < m; k++)
        if (items[k] < 0 || items[k] >= n) {
            PyErr_SetString(PyExc_IndexError, "overlaps: item out of range");
            goto done;
        }
    starts = (start_t *)malloc(sizeof(start_t) * (size_t)(m + 1));
    live = (int64_t *)malloc(sizeof(int64_t) * (size_t)(m + 1));
    Py_ssize_t npairs = 0, cap = 1024;
    pairs = (int64_t *)malloc(sizeof(int64_t) * 2 * (size_t)cap);
    if (!starts || !live || !pairs) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < m; k++) {
        starts[k].first = first[items[k]];
        starts[k].item = items[k];
    }
    qsort(starts, (size_t)m, sizeof(start_t), cmp_start);
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
                if (!grown) {
                    PyErr_NoMemory();
                    goto done;
                }
                pairs = grown;
            }
            pairs[2 * npairs] = i;
            pairs[2 * npairs + 1] = j;
            npairs++;
        }
        nlive = keep;
        live[nlive++] = i;
    }
    int64_t *ptr, *ind;
    a_ptr = new_i64_array(n + 1, &ptr);
    if (!a_ptr) goto done;
    a_ind = new_i64_array(2 * npairs, &ind);
    if (!a_ind) goto done;
    for (Py_ssize_t p = 0; p < npairs; p++) {
        ptr[pairs[2 * p] + 1]++;
        ptr[pairs[2 * p + 1] + 1]++;
    }
    for (Py_ssize_t k = 0; k < n; k++) ptr[k + 1] += ptr[k];
    fill = (int64_t *)malloc(sizeof(int64_t) * (size_t)(n + 1));
    if (!fill) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(fill, ptr, sizeof(int64_t) * (size_t)(n + 1));
    for (Py_ssize_t p = 0; p < npairs; p++) {
        int64_t i = pairs[2 * p], j = pairs[2 * p + 1];
        ind[fill[i]++] = j;
        ind[fill[j]++] = i;
    }
    result = PyTuple_Pack(2, a_ptr, a_ind);
done:
    Py_XDECREF(a_ptr);
    Py_XDECREF(a_ind);
    free(starts);
    free(live);
    free(pairs);
    free(fill);
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

static int cmp_event(const void *a, const void *b) {
    const event_t *x = (const event_t *)a, *y = (const event_t *)b;
    if (x->step != y->step) return x->step < y->step ? -1 : 1;
    return (x->delta > y->delta) - (x->delta < y->delta);
}

/* planner._peak: the largest total size live at one step (releases first at equal steps). */
static PyObject *native_peak(PyObject *self, PyObject *args) {
    PyObject *o[3];
    if (!PyArg_ParseTuple(args, "OOO", &o[0], &o[1], &o[2])) return NULL;
    Py_buffer v[3];
    const char *names[3] = {"first", "last", "size"};
    int got = get_all(o, v, 3, names, -1);
    PyObject *result = NULL;
    event_t *ev = NULL;
    if (got < 3) goto done;
    Py_ssize_t n = v[0].len / 8;
    if (v[1].len / 8 != n || v[2].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "peak: arrays of different lengths");
        goto done;
    }
    const int64_t *first = v[0].buf, *last = v[1].buf, *size = v[2].buf;
    ev = (event_t *)malloc(sizeof(event_t) * (size_t)(2 * n + 1));
    if (!ev) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t m = 0;
    for (Py_ssize_t k = 0; k < n; k++)
        if (size[k]) {
            ev[m].step = first[k];
            ev[m++].delta = size[k];
            ev[m].step = last[k] + 1;
            ev[m++].delta = -size[k];
        }
    qsort(ev, (size_t)m, sizeof(event_t), cmp_event);
    int64_t live = 0, peak = 0;
    for (Py_ssize_t k = 0; k < m; k++) {
        live += ev[k].delta;
        if (live > peak) peak = live;
    }
    result = PyLong_FromLongLong(peak);
done:
    free(ev);
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    return result;
}

/* planner._count_pairs: the number of time-overlapping pairs among items. */
static PyObject *native_count_pairs(PyObject *self, PyObject *args) {
    PyObject *o[3];
    if (!PyArg_ParseTuple(args, "OOO", &o[0], &o[1], &o[2])) return NULL;
    Py_buffer v[3];
    const char *names[3] = {"items", "first", "last"};
    int got = get_all(o, v, 3, names, -1);
    PyObject *result = NULL;
    int64_t *starts = NULL, *ends = NULL;
    if (got < 3) goto done;
    const int64_t *items = v[0].buf, *first = v[1].buf, *last = v[2].buf;
    Py_ssize_t m = v[0].len / 8, n = v[1].len / 8;
    if (v[2].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "count_pairs: arrays of different lengths");
        goto done;
    }
    starts = (int64_t *)malloc(sizeof(int64_t) * (size_t)(m + 1));
    ends = (int64_t *)malloc(sizeof(int64_t) * (size_t)(m + 1));
    if (!starts || !ends) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < m; k++) {
        if (items[k] < 0 || items[k] >= n) {
            PyErr_SetString(PyExc_IndexError, "count_pairs: item out of range");
            goto done;
        }
        starts[k] = first[items[k]];
        ends[k] = last[items[k]];
    }
    qsort(starts, (size_t)m, sizeof(int64_t), cmp_i64);
    qsort(ends, (size_t)m, sizeof(int64_t), cmp_i64);
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
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    return result;
}

/* ---- time sweep (planner._sweep / planner._Gaps) ---- */

/* int64 -> int64 hash map, open addressing with linear probing and backward-shift deletion; keys >= 0. */
typedef struct {
    int64_t *key, *val;
    size_t mask;
} map_t;

static size_t map_slot(const map_t *m, int64_t k) { return (size_t)(((uint64_t)k * 0x9E3779B97F4A7C15ull) >> 20) & m->mask; }

static int map_init(map_t *m, Py_ssize_t items) {
    size_t cap = 16;
    while (cap < (size_t)(2 * items + 2)) cap <<= 1;
    m->mask = cap - 1;
    m->key = (int64_t *)malloc(sizeof(int64_t) * cap);
    m->val = (int64_t *)malloc(sizeof(int64_t) * cap);
    if (!m->key || !m->val) return -1;
    memset(m->key, 0xff, sizeof(int64_t) * cap); /* every key -1: empty */
    return 0;
}

static void map_put(map_t *m, int64_t k, int64_t v) {
    size_t i = map_slot(m, k);
    while (m->key[i] != -1 && m->key[i] != k) i = (i + 1) & m->mask;
    m->key[i] = k;
    m->val[i] = v;
}

static int map_get(const map_t *m, int64_t k, int64_t *v) {
    size_t i = map_slot(m, k);
    while (m->key[i] != -1) {
        if (m->key[i] == k) {
            *v = m->val[i];
            return 1;
        }
        i = (i + 1) & m->mask;
    }
    return 0;
}

static void map_del(map_t *m, int64_t k) {
    size_t i = map_slot(m, k);
    while (m->key[i] != k) {
        if (m->key[i] == -1) return;
        i = (i + 1) & m->mask;
    }
    size_t j = i;
    for (;;) {
        j = (j + 1) & m->mask;
        if (m->key[j] == -1) break;
        size_t h = map_slot(m, m->key[j]);
        /* move key j back to the hole i unless its home slot lies cyclically in (i, j] */
        int stays = i <= j ? (h > i && h <= j) : (h > i || h <= j);
        if (!stays) {
            m->key[i] = m->key[j];
            m->val[i] = m->val[j];
            i = j;
        }
    }
    m->key[i] = -1;
}

typedef struct {
    int64_t *lo, *hi;
    Py_ssize_t n, cap;
} gaplist_t; /* free ranges of one length class, ascending by start */

/* The free ranges below the top live buffer, by start and by end, and by length class; and the top. */
typedef struct {
    int64_t base, top;
    map_t by_lo, by_hi;
    gaplist_t cls[65];
} gaps_t;

static int bitlen(int64_t v) {
    int c = 0;
    while (v) {
        c++;
        v >>= 1;
    }
    return c;
}

static Py_ssize_t lower(const int64_t *a, Py_ssize_t n, int64_t x) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (a[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int add_gap(gaps_t *g, int64_t lo, int64_t hi) {
    if (hi <= lo) return 0;
    gaplist_t *l = &g->cls[bitlen(hi - lo)];
    if (l->n == l->cap) {
        Py_ssize_t cap = l->cap ? 2 * l->cap : 16;
        int64_t *a = (int64_t *)realloc(l->lo, sizeof(int64_t) * (size_t)cap);
        if (!a) return -1;
        l->lo = a;
        a = (int64_t *)realloc(l->hi, sizeof(int64_t) * (size_t)cap);
        if (!a) return -1;
        l->hi = a;
        l->cap = cap;
    }
    Py_ssize_t j = lower(l->lo, l->n, lo);
    memmove(l->lo + j + 1, l->lo + j, sizeof(int64_t) * (size_t)(l->n - j));
    memmove(l->hi + j + 1, l->hi + j, sizeof(int64_t) * (size_t)(l->n - j));
    l->lo[j] = lo;
    l->hi[j] = hi;
    l->n++;
    map_put(&g->by_lo, lo, hi);
    map_put(&g->by_hi, hi, lo);
    return 0;
}

/* forget the free range [lo, hi) */
static void drop_gap(gaps_t *g, int64_t lo, int64_t hi) {
    gaplist_t *l = &g->cls[bitlen(hi - lo)];
    Py_ssize_t j = lower(l->lo, l->n, lo);
    memmove(l->lo + j, l->lo + j + 1, sizeof(int64_t) * (size_t)(l->n - j - 1));
    memmove(l->hi + j, l->hi + j + 1, sizeof(int64_t) * (size_t)(l->n - j - 1));
    l->n--;
    map_del(&g->by_lo, lo);
    map_del(&g->by_hi, hi);
}

/* Lowest aligned offset where s bytes are free (or, best fit, one in the tightest gap of the size's class,
 * else the lowest of the next class): planner._Gaps.find. *glo is the gap's start, or -1 for the top. */
static int64_t gaps_find(const gaps_t *g, int64_t s, int64_t a, int best_fit, int64_t *glo) {
    int cs = bitlen(s);
    *glo = -1;
    if (best_fit) {
        for (int c = cs; c < 65; c++) {
            const gaplist_t *l = &g->cls[c];
            int64_t best = -1, room = 0;
            for (Py_ssize_t k = 0; k < l->n; k++) {
                int64_t x = align_up(l->lo[k], a), r = l->hi[k] - x;
                if (r >= s && (best < 0 || r < room)) {
                    best = x;
                    room = r;
                    *glo = l->lo[k];
                    if (c > cs) break;
                }
            }
            if (best >= 0) return best;
        }
        return align_up(g->top, a);
    }
    int64_t best = align_up(g->top, a);
    for (int c = cs; c < 65; c++) {
        const gaplist_t *l = &g->cls[c];
        for (Py_ssize_t k = 0; k < l->n; k++) {
            int64_t lo = l->lo[k];
            if (lo >= best) break;
            int64_t x = align_up(lo, a);
            if (x + s <= l->hi[k]) {
                best = x;
                *glo = lo;
                break;
            }
        }
    }
    return best;
}

/* [x, x+s) is taken, inside the gap starting at glo (or above the top when glo < 0): planner._Gaps.occupy */
static int gaps_occupy(gaps_t *g, int64_t x, int64_t s, int64_t glo) {
    if (glo < 0) {
        if (add_gap(g, g->top, x) < 0) return -1;
        g->top = x + s;
        return 0;
    }
    int64_t ghi = 0;
    map_get(&g->by_lo, glo, &ghi);
    drop_gap(g, glo, ghi);
    if (add_gap(g, glo, x) < 0 || add_gap(g, x + s, ghi) < 0) return -1;
    return 0;
}

/* the live buffer [x, end) is freed: planner._Gaps.release */
static int gaps_release(gaps_t *g, int64_t x, int64_t end) {
    int64_t below = x, next = end;
    if (map_get(&g->by_hi, x, &below)) drop_gap(g, below, x);
    if (end == g->top) {
        g->top = below;
        return 0;
    }
    if (map_get(&g->by_lo, end, &next)) drop_gap(g, end, next);
    return add_gap(g, below, next);
}

/* min-heap of (last step, offset, end) */
static void heap_push(int64_t *h, Py_ssize_t *n, int64_t last, int64_t off, int64_t end) {
    Py_ssize_t k = (*n)++;
    while (k) {
        Py_ssize_t p = (k - 1) / 2;
        if (h[3 * p] <= last) break;
        memcpy(h + 3 * k, h + 3 * p, 3 * sizeof(int64_t));
        k = p;
    }
    h[3 * k] = last;
    h[3 * k + 1] = off;
    h[3 * k + 2] = end;
}

static void heap_pop(int64_t *h, Py_ssize_t *n, int64_t *off, int64_t *end) {
    *off = h[1];
    *end = h[2];
    Py_ssize_t m = --(*n);
    int64_t last[3] = {h[3 * m], h[3 * m + 1], h[3 * m + 2]};
    Py_ssize_t k = 0;
    for (;;) {
        Py_ssize_t c = 2 * k + 1;
        if (c >= m) break;
        if (c + 1 < m && h[3 * (c + 1)] < h[3 * c]) c++;
        if (h[3 * c] >= last[0]) break;
        memcpy(h + 3 * k, h + 3 * c, 3 * sizeof(int64_t));
        k = c;
    }
    memcpy(h + 3 * k, last, 3 * sizeof(int64_t));
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
    g.base = g.top = base;
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
    heap = (int64_t *)malloc(sizeof(int64_t) * 3 * (size_t)(m + 1));
    if (!heap || map_init(&g.by_lo, m + 1) < 0 || map_init(&g.by_hi, m + 1) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t nheap = 0;
    int64_t height = base;
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t k = 0; k < m && !failed; k++) {
        int64_t b = order[k], f = first[b], glo, x, end;
        while (nheap && heap[0] < f) {
            heap_pop(heap, &nheap, &x, &end);
            if (gaps_release(&g, x, end) < 0) failed = 1;
        }
        x = gaps_find(&g, size[b], align[b], best_fit, &glo);
        if (gaps_occupy(&g, x, size[b], glo) < 0) failed = 1;
        heap_push(heap, &nheap, last[b], x, x + size[b]);
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
    free(g.by_lo.key);
    free(g.by_lo.val);
    free(g.by_hi.key);
    free(g.by_hi.val);
    for (int c = 0; c < 65; c++) {
        free(g.cls[c].lo);
        free(g.cls[c].hi);
    }
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    return result;
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

static PyMethodDef methods[] = {
    {"exact_search", native_exact_search, METH_VARARGS, "A paused exact search (see planner._Search)."},
    {"exact_resume", native_exact_resume, METH_VARARGS, "Run a paused exact search on to its next pause or end."},
    {"place_dense", native_place_dense, METH_VARARGS, "place() without neighbour lists, for dense inputs."},
    {"sweep", native_sweep, METH_VARARGS, "First or best fit in start order over the live gaps (see planner._sweep)."},
    {"peak", native_peak, METH_VARARGS, "Largest total size live at one step (see planner._peak)."},
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
