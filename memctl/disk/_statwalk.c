/* One folder of the freshness walk, listed and stat'ed in C (memctl/disk/filescan.py).

   The walk is a stat call per file (the kernel's work) and, in Python, ~1.5 us more a file
   of interpreter work around each call: a third of the walk's time at 10k notes
   (bench/README.md, "2026-12-06, the compiled walk"). This module does the same listing
   without the interpreter: the regular files named `*.md` (any case of the suffix) and the
   subfolders of one folder, not links, no name starting with `.`, each file's (name,
   mtime_ns, ctime_ns, size) entry.

   It returns the entries in the form their folder's digest is made of: `marshal.dumps` of
   the list of entries sorted, format version 2 (filescan.entries_digest), written here byte
   for byte as CPython 3 writes it, so no Python object is made per file. Whatever this code
   does not write the way marshal would (a name that is not UTF-8, a time too far from 1970
   for 64 bits of nanoseconds, a folder it cannot open or read whole) makes it return None,
   and the folder is listed by the Python code instead: the two never disagree
   (tests/test_statwalk.py holds them equal). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef __APPLE__
#define st_mtim st_mtimespec
#define st_ctim st_ctimespec
#endif

/* Bumped with every change of what list_folder returns: filescan.py uses a build of this
   module only when the two agree (an editable install keeps the module it built). */
#define STATWALK_VERSION 1

/* Seconds beyond which mtime_ns or ctime_ns would not fit in 64 bits (year 2255). */
#define SECONDS_LIMIT 9000000000LL

typedef struct {
    char *name;
    size_t length;
    int64_t mtime_ns, ctime_ns, size;
} entry;

typedef struct {
    unsigned char *data;
    size_t length, room;
} buffer;

static int grow(buffer *out, size_t more) {
    if (out->length + more <= out->room)
        return 0;
    size_t room = out->room ? out->room : 4096;
    while (room < out->length + more)
        room *= 2;
    unsigned char *data = realloc(out->data, room);
    if (data == NULL)
        return -1;
    out->data = data;
    out->room = room;
    return 0;
}

static int put_byte(buffer *out, unsigned char byte) {
    if (grow(out, 1) < 0)
        return -1;
    out->data[out->length++] = byte;
    return 0;
}

static int put_int32(buffer *out, int32_t value) {
    if (grow(out, 4) < 0)
        return -1;
    uint32_t bits = (uint32_t)value;
    for (int shift = 0; shift < 32; shift += 8)
        out->data[out->length++] = (unsigned char)(bits >> shift);
    return 0;
}

/* An int as marshal writes it: TYPE_INT ('i') when it fits in 32 bits, else TYPE_LONG ('l'):
   the number of 15-bit digits (negative for a negative number), then the digits of its
   absolute value, least significant first, each in two bytes. */
static int put_integer(buffer *out, int64_t value) {
    if (value >= INT32_MIN && value <= INT32_MAX)
        return put_byte(out, 'i') < 0 ? -1 : put_int32(out, (int32_t)value);
    uint64_t magnitude = value < 0 ? (uint64_t)0 - (uint64_t)value : (uint64_t)value;
    unsigned char digits[10][2];
    int count = 0;
    while (magnitude) {
        digits[count][0] = (unsigned char)(magnitude & 0xff);
        digits[count][1] = (unsigned char)((magnitude >> 8) & 0x7f);
        magnitude >>= 15;
        count++;
    }
    if (put_byte(out, 'l') < 0 || put_int32(out, value < 0 ? -count : count) < 0
            || grow(out, (size_t)count * 2) < 0)
        return -1;
    for (int i = 0; i < count; i++) {
        out->data[out->length++] = digits[i][0];
        out->data[out->length++] = digits[i][1];
    }
    return 0;
}

static int is_ascii(const char *name, size_t length) {
    for (size_t i = 0; i < length; i++)
        if ((unsigned char)name[i] >= 0x80)
            return 0;
    return 1;
}

static int by_name(const void *left, const void *right) {
    const entry *a = left, *b = right;
    size_t shorter = a->length < b->length ? a->length : b->length;
    int order = memcmp(a->name, b->name, shorter);
    if (order)
        return order;
    return a->length < b->length ? -1 : a->length > b->length;
}

static int is_markdown(const char *name, size_t length) {
    return length >= 3 && name[length - 3] == '.' && (name[length - 2] | 0x20) == 'm'
        && (name[length - 1] | 0x20) == 'd';
}

/* Whether `name` is well-formed UTF-8 as Python's strict decoder reads it (Unicode's table
   of well-formed byte sequences: no overlong form, no surrogate, nothing past U+10FFFF). */
static int is_utf8(const unsigned char *name, size_t length) {
    size_t i = 0;
    while (i < length) {
        unsigned char first = name[i];
        if (first < 0x80) {
            i++;
            continue;
        }
        size_t more;
        unsigned char low = 0x80, high = 0xbf;
        if (first >= 0xc2 && first <= 0xdf)
            more = 1;
        else if (first >= 0xe0 && first <= 0xef) {
            more = 2;
            if (first == 0xe0)
                low = 0xa0;
            else if (first == 0xed)
                high = 0x9f;
        } else if (first >= 0xf0 && first <= 0xf4) {
            more = 3;
            if (first == 0xf0)
                low = 0x90;
            else if (first == 0xf4)
                high = 0x8f;
        } else
            return 0;
        if (length - i - 1 < more || name[i + 1] < low || name[i + 1] > high)
            return 0;
        for (size_t j = 2; j <= more; j++)
            if (name[i + j] < 0x80 || name[i + j] > 0xbf)
                return 0;
        i += more + 1;
    }
    return 1;
}

typedef struct {
    entry *items;
    size_t count, room;
} entries;

typedef struct {
    entries files, folders;
    int utf8_names;  /* names are UTF-8 (else any name beyond ASCII is left to Python) */
    int fell_back;  /* something this code does not write as marshal would: Python lists it */
    int out_of_memory;
} listing;

/* A copy of `name` added to `list` (its times and size are the caller's to fill); NULL
   when memory ran out. */
static entry *add_item(entries *list, const char *name, size_t length) {
    if (list->count == list->room) {
        size_t room = list->room ? list->room * 2 : 64;
        entry *items = realloc(list->items, room * sizeof(entry));
        if (items == NULL)
            return NULL;
        list->items = items;
        list->room = room;
    }
    char *copy = malloc(length ? length : 1);
    if (copy == NULL)
        return NULL;
    memcpy(copy, name, length);
    entry *item = &list->items[list->count++];
    item->name = copy;
    item->length = length;
    item->mtime_ns = item->ctime_ns = item->size = 0;
    return item;
}

static void free_items(entries *list) {
    for (size_t i = 0; i < list->count; i++)
        free(list->items[i].name);
    free(list->items);
}

/* Read the folder open at `fd` (closed here), without the interpreter: the caller has
   released the GIL, as Python's own os.listdir and os.stat do, so the threads of a
   long-running memctl (the MCP server's, the watcher's) go on meanwhile. */
static void read_folder(int fd, listing *found) {
    DIR *folder = fdopendir(fd);
    if (folder == NULL) {
        close(fd);
        found->fell_back = 1;
        return;
    }
    for (;;) {
        errno = 0;
        struct dirent *item = readdir(folder);
        if (item == NULL) {
            if (errno)
                found->fell_back = 1;  /* a folder not read whole: Python's rules decide */
            break;
        }
        const char *name = item->d_name;
        if (name[0] == '.')
            continue;
        size_t length = strlen(name);
        struct stat info;
        if (fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) != 0)
            continue;  /* gone since it was listed, as the Python code skips it */
        int markdown = S_ISREG(info.st_mode) && is_markdown(name, length);
        if (!markdown && !S_ISDIR(info.st_mode))
            continue;
        if (!(found->utf8_names ? is_utf8((const unsigned char *)name, length)
                                : is_ascii(name, length))) {
            found->fell_back = 1;  /* a name that is no memory's: filescan._all_utf8 says */
            break;
        }
        if (markdown && (info.st_mtim.tv_sec <= -SECONDS_LIMIT
                         || info.st_mtim.tv_sec >= SECONDS_LIMIT
                         || info.st_ctim.tv_sec <= -SECONDS_LIMIT
                         || info.st_ctim.tv_sec >= SECONDS_LIMIT)) {
            found->fell_back = 1;
            break;
        }
        entry *added = add_item(markdown ? &found->files : &found->folders, name, length);
        if (added == NULL) {
            found->out_of_memory = 1;
            break;
        }
        if (markdown) {
            added->mtime_ns = (int64_t)info.st_mtim.tv_sec * 1000000000LL + info.st_mtim.tv_nsec;
            added->ctime_ns = (int64_t)info.st_ctim.tv_sec * 1000000000LL + info.st_ctim.tv_nsec;
            added->size = (int64_t)info.st_size;
        }
    }
    closedir(folder);
}

static int write_entries(buffer *out, listing *found) {
    if (found->files.count > 1)  /* qsort of a NULL array is undefined, even of none */
        qsort(found->files.items, found->files.count, sizeof(entry), by_name);
    if (found->files.count > INT32_MAX || put_byte(out, '[') < 0
            || put_int32(out, (int32_t)found->files.count) < 0)
        return -1;
    for (size_t i = 0; i < found->files.count; i++) {
        entry *item = &found->files.items[i];
        if (item->length > INT32_MAX || put_byte(out, '(') < 0 || put_int32(out, 4) < 0
                || put_byte(out, 's') < 0 || put_int32(out, (int32_t)item->length) < 0
                || grow(out, item->length) < 0)
            return -1;
        memcpy(out->data + out->length, item->name, item->length);
        out->length += item->length;
        if (put_integer(out, item->mtime_ns) < 0 || put_integer(out, item->ctime_ns) < 0
                || put_integer(out, item->size) < 0)
            return -1;
    }
    return 0;
}

/* list_folder(path: bytes, utf8_names: bool) -> (entries: bytes, count: int,
                                                 subfolders: list[bytes]) | None

   `entries` is marshal.dumps(sorted(entries), 2) of the folder's files; None where the
   Python code must list this folder (see the top of this file). `utf8_names`: names are
   read as UTF-8 (filescan._UTF8_NAMES); else only ASCII names are taken here. */
static PyObject *list_folder(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2 || !PyBytes_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "list_folder() takes a path in bytes and a flag");
        return NULL;
    }
    PyObject *path = args[0];
    int utf8_names = PyObject_IsTrue(args[1]);
    if (utf8_names < 0)
        return NULL;
    const char *text = PyBytes_AS_STRING(path);
    if ((size_t)PyBytes_GET_SIZE(path) != strlen(text))
        Py_RETURN_NONE;
    listing found = {{NULL, 0, 0}, {NULL, 0, 0}, utf8_names, 0, 0};
    buffer out = {NULL, 0, 0};
    int fd, written = 0;
    Py_BEGIN_ALLOW_THREADS
    fd = open(text, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        read_folder(fd, &found);
        if (!found.fell_back && !found.out_of_memory)
            written = write_entries(&out, &found) == 0;
    }
    Py_END_ALLOW_THREADS
    PyObject *result = NULL, *folders = NULL;
    if (fd < 0 || found.fell_back) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    if (found.out_of_memory || !written) {
        PyErr_NoMemory();
        goto done;
    }
    folders = PyList_New((Py_ssize_t)found.folders.count);
    if (folders == NULL)
        goto done;
    for (size_t i = 0; i < found.folders.count; i++) {
        PyObject *name = PyBytes_FromStringAndSize(found.folders.items[i].name,
                                                   (Py_ssize_t)found.folders.items[i].length);
        if (name == NULL)
            goto done;
        PyList_SET_ITEM(folders, (Py_ssize_t)i, name);
    }
    result = Py_BuildValue("(y#nO)", (const char *)out.data, (Py_ssize_t)out.length,
                           (Py_ssize_t)found.files.count, folders);
done:
    free_items(&found.files);
    free_items(&found.folders);
    free(out.data);
    Py_XDECREF(folders);
    return result;
}

static PyMethodDef statwalk_methods[] = {
    {"list_folder", (PyCFunction)(void (*)(void))list_folder, METH_FASTCALL,
     "list_folder(path, utf8_names) -> (marshal.dumps(sorted entries, 2), count, subfolders)"
     " or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef statwalk_module = {
    PyModuleDef_HEAD_INIT, "_statwalk",
    "One folder of memctl's freshness walk, in C (memctl/disk/filescan.py).", -1,
    statwalk_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__statwalk(void) {
    PyObject *module = PyModule_Create(&statwalk_module);
    if (module != NULL && PyModule_AddIntConstant(module, "VERSION", STATWALK_VERSION) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
