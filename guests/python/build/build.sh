#!/bin/sh
# build.sh WORK OUT: builds plimsoll's Python guest, CPython 3.13 for wasm32-wasip1, from the
# vendored tarballs with Debian's clang-19, lld-19 and wasi-libc. Run by
# `go run ./guests/internal/wasmbuild python`, which instruments the module's loops, compresses
# both results and commits nothing itself.
#
#   WORK  a scratch directory (a build there is reused: steps whose result exists are skipped)
#   OUT   receives python.wasm (the reactor, not yet instrumented), stdlib.zip, LICENSE.cpython
#
# Environment: PLIMSOLL_VENDOR_DIR (default ../shared/vendor beside the module root), JOBS.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
work=$1
out=$2
vendor=${PLIMSOLL_VENDOR_DIR:-$(dirname "$root")/shared/vendor}
jobs=${JOBS:-$(nproc)}
mkdir -p "$work" "$out"
work=$(cd "$work" && pwd)
out=$(cd "$out" && pwd)

# Every path the compiler or the stdlib sees is under $work; it is mapped to /build so no path of
# this machine reaches the artifacts, and __DATE__ is fixed.
export SOURCE_DATE_EPOCH=0 LC_ALL=C TZ=UTC PYTHONHASHSEED=0
umask 022

log() { printf 'build.sh: %s\n' "$*" >&2; }

# 1. The pinned sources, checked against the hashes in INPUTS (the vendor README lists them too).
py_tar=python3.13_3.13.5.orig.tar.xz
py_sum=93e583f243454e6e9e4588ca2c2662206ad961659863277afcdb96801647d640
z_tar=zlib_1.3.dfsg+really1.3.1.orig.tar.gz
z_sum=60dd315c07f616887caa029408308a018ace66e3d142726a97db164b3b8f69fb
for pair in "$py_tar $py_sum" "$z_tar $z_sum"; do
	set -- $pair
	got=$(sha256sum "$vendor/$1" | cut -d' ' -f1) || { log "missing $vendor/$1 (set PLIMSOLL_VENDOR_DIR)"; exit 1; }
	[ "$got" = "$2" ] || { log "$1: sha256 $got, want $2"; exit 1; }
done
src=$work/Python-3.13.5
zsrc=$work/zlib-1.3.1
[ -d "$src" ] || tar -C "$work" -xJf "$vendor/$py_tar"
[ -d "$zsrc" ] || tar -C "$work" -xzf "$vendor/$z_tar"

# 2. The toolchain: wrappers that pin the target and a sysroot of links to Debian's wasi-libc
# (without --sysroot clang also searches the host's glibc headers, which misleads configure).
clang-19 --version | grep -q 'version 19.1.7' || { log "need clang-19 19.1.7"; exit 1; }
mkdir -p "$work/bin" "$work/sysroot/include" "$work/sysroot/lib"
ln -sfn /usr/include/wasm32-wasi "$work/sysroot/include/wasm32-wasi"
ln -sfn /usr/lib/wasm32-wasi "$work/sysroot/lib/wasm32-wasi"
flags="--target=wasm32-wasi --sysroot=$work/sysroot -ffile-prefix-map=$work=/build -fdebug-prefix-map=$work=/build -fno-ident -mbulk-memory -Wno-unused-command-line-argument"
printf '#!/bin/sh\nexec clang-19 %s "$@"\n' "$flags" >"$work/bin/wasi-cc"
printf '#!/bin/sh\nexec clang-19 %s -E "$@"\n' "$flags" >"$work/bin/wasi-cpp"
chmod +x "$work/bin/wasi-cc" "$work/bin/wasi-cpp"
CC=$work/bin/wasi-cc

# 3. zlib for wasm32 (the zlib module, and binascii's crc32).
zlib=$work/zlib-wasm
if [ ! -f "$zlib/libz.a" ]; then
	log "zlib"
	mkdir -p "$zlib"
	for f in adler32 compress crc32 deflate infback inffast inflate inftrees trees uncompr zutil; do
		"$CC" -O2 -g0 -c "$zsrc/$f.c" -o "$zlib/$f.o"
	done
	(cd "$zlib" && rm -f libz.a && llvm-ar-19 rcsD libz.a adler32.o compress.o crc32.o deflate.o infback.o \
		inffast.o inflate.o inftrees.o trees.o uncompr.o zutil.o)
	cp "$zsrc/zlib.h" "$zsrc/zconf.h" "$zlib/"
fi

# 4. The native "build python" of the same version, which the cross build runs.
native=$work/native
if [ ! -x "$native/python" ]; then
	log "native build python (slow)"
	mkdir -p "$native"
	(cd "$native" && env -u CC -u CFLAGS "$src/configure" --without-ensurepip --disable-test-modules >configure.log 2>&1 &&
		make -j"$jobs" >make.log 2>&1) || { log "native build failed, see $native/*.log"; exit 1; }
fi

# 5. The cross build. Debian's wasi-libc has no <pthread.h>, so configure cannot size
# pthread_t: the stub types are 4 bytes on wasm32. configure is called by a relative path: it
# becomes VPATH, which getpath.c holds as a string, so an absolute one would put this machine's
# path into the module.
cross=$work/cross
if [ ! -f "$cross/python.wasm" ]; then
	log "cross build"
	mkdir -p "$cross/Modules"
	cat "$src/Tools/wasm/config.site-wasm32-wasi" - >"$work/config.site" <<'SITE'
ac_cv_have_pthread_t=yes
ac_cv_sizeof_pthread_t=4
ac_cv_sizeof_pthread_key_t=4
ac_cv_pthread_key_t_is_arithmetic_type=yes
SITE
	cp "$here/Setup.local" "$cross/Modules/Setup.local"
	# pkg-config must find nothing of the host (its libffi, liblzma, libuuid are not wasm).
	(cd "$cross" && PKG_CONFIG_PATH= PKG_CONFIG_LIBDIR=$work/sysroot/lib/pkgconfig CONFIG_SITE=$work/config.site CC="$CC" CPP="$work/bin/wasi-cpp" AR=llvm-ar-19 RANLIB=llvm-ranlib-19 \
		OPT="-DNDEBUG -O3 -g0 -Wall" ZLIB_CFLAGS="-I$zlib" ZLIB_LIBS="-L$zlib -lz" \
		../Python-3.13.5/configure --host=wasm32-wasip1 --build="$("$src/config.guess")" --with-build-python="$native/python" \
		--without-ensurepip --disable-test-modules --disable-ipv6 >configure.log 2>&1 &&
		make -j"$jobs" python.wasm pybuilddir.txt >make.log 2>&1) || { log "cross build failed, see $cross/*.log"; exit 1; }
fi

# 6. The reactor: our entry points and the _plimsoll bridge, linked with libpython and the
# libraries of the modules Setup.local chose. 8 MiB of stack, first, as CPython's own WASI link.
log "link"
cp "$here/../src/plimsoll.c" "$here/../src/abi.h" "$work/"
"$CC" -O2 -g0 -Wall -Werror -I"$cross" -I"$src/Include" -c "$work/plimsoll.c" -o "$work/plimsoll.o"
libs=$(cd "$cross" && printf 'print-libs:\n\t@echo $(MODLIBS) $(LIBS) $(SYSLIBS)\n' | make -s -f Makefile -f - print-libs)
(cd "$cross" && "$CC" -fuse-ld=lld -mexec-model=reactor -Wl,--no-entry -Wl,-z,stack-size=8388608 -Wl,--stack-first \
	-Wl,--strip-all -o "$out/python.wasm" "$work/plimsoll.o" libpython3.13.a $libs)

# 7. The standard library: sourceless .pyc (unchecked hash, no timestamps) in a stored zip with
# fixed dates, without tests, GUI, packaging tools and modules whose C part is not built.
log "stdlib"
# A fixed hash seed (which -I would ignore) orders the frozensets the compiler makes constants.
env -i PYTHONHASHSEED=0 LC_ALL=C "$native/python" -S -s -B "$here/mkzip.py" "$src/Lib" "$cross/$(cat "$cross/pybuilddir.txt")" "$work" "$out/stdlib.zip"
cp "$src/LICENSE" "$out/LICENSE.cpython"
log "done: $out"
