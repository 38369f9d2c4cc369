# Laya - one readable Makefile.
#   make            build build/laya and build/liblaya.a
#   make test       every unit test (ends with "N passed, N failed")
#   make bench      benchmarks (print tables; never part of the tests)
#   make corpus     fetch and build the training corpora (network, slow)
#   make SANITIZE=address,undefined test   the same under sanitizers (build-san/)
#   make fuzz       every libFuzzer target for FUZZ_SECONDS (clang-14, ASan+UBSan)
#   make soak       the daemon under mixed clients for SOAK_SECONDS
# Nothing is built with -ffast-math (the references least of all). ISA flags
# are per file for the keystroke path (*_avx2.c, *_avx512.c: it runs on any
# x86-64 and picks its kernels at run time), but src/train is compiled whole
# with -march=x86-64-v3 (AVX2, FMA, BMI2: CPUs from 2015 on), so `laya train`
# needs such a CPU; nothing outside src/train calls into it.

CC       ?= cc
PREFIX   ?= /usr/local
SANITIZE ?=
BUILD    ?= build

CFLAGS   = -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -Wshadow \
           -Wno-unused-parameter -Iinclude -Isrc -fopenmp
LDLIBS   = -ljansson -lsodium -lsqlite3 -lm -fopenmp
# XCFLAGS: more flags for every object (the fuzz build's, below).
CFLAGS  += $(XCFLAGS)

ifneq ($(SANITIZE),)
  BUILD   = build-san
  CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
  LDLIBS += -fsanitize=$(SANITIZE)
endif

LIB_SRC   = $(sort $(wildcard src/util/*.c src/tok/*.c src/kern/*.c src/model/*.c \
                              src/engine/*.c src/eval/*.c src/learn/*.c src/notes/*.c src/intent/*.c src/prior/*.c src/train/*.c src/sim/*.c \
                              src/server/*.c))
CLI_SRC   = $(sort $(wildcard src/cli/*.c))
TEST_SRC  = $(sort $(wildcard tests/*.c))
BENCH_SRC = $(sort $(wildcard bench/*.c))

LIB_OBJ   = $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ   = $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_OBJ  = $(TEST_SRC:%.c=$(BUILD)/%.o)
BENCH_OBJ = $(BENCH_SRC:%.c=$(BUILD)/%.o)

# Per-file instruction sets: only the vector loops are built for them.
ISA_AVX2   = -mavx2 -mfma -mf16c
ISA_AVX512 = $(ISA_AVX2) -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni
$(BUILD)/%_avx2.o:   CFLAGS += $(ISA_AVX2)
$(BUILD)/%_avx512.o: CFLAGS += $(ISA_AVX512)
# The fuzz build (make fuzz, below) leaves UBSan out of the per-ISA vector
# files: clang-14 spends over 5 minutes instrumenting each of them (ASan
# alone: about one), and the gcc sanitizer build (SANITIZE=address,undefined)
# runs them under UBSan in the tests.
ifneq ($(findstring LAYA_FUZZ,$(XCFLAGS)),)
$(BUILD)/%_avx2.o $(BUILD)/%_avx512.o: CFLAGS += -fno-sanitize=undefined
endif
# The trainer is throughput code for machines from 2015 on (AVX2+FMA).
$(BUILD)/src/train/%.o: CFLAGS += -O3 -march=x86-64-v3

.PHONY: all lib test test-c bench corpus clean install cuda layers
all: $(BUILD)/laya

lib: $(BUILD)/liblaya.a

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/liblaya.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/laya: $(CLI_OBJ) $(BUILD)/liblaya.a
	$(CC) $(CFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/liblaya.a $(LDLIBS)

$(BUILD)/laya_tests: $(TEST_OBJ) $(BUILD)/liblaya.a
	$(CC) $(CFLAGS) -o $@ $(TEST_OBJ) $(BUILD)/liblaya.a $(LDLIBS)

$(BUILD)/laya_bench: $(BENCH_OBJ) $(BUILD)/liblaya.a
	$(CC) $(CFLAGS) -o $@ $(BENCH_OBJ) $(BUILD)/liblaya.a $(LDLIBS)

test: $(BUILD)/laya_tests $(BUILD)/laya
	BUILD=$(BUILD) sh tests/run.sh

# Folders depend downwards only, in the order of docs/DESIGN.md ("Layers"):
# names every include of src/ that goes up or sideways.
layers:
	sh scripts/layers.sh

bench: $(BUILD)/laya_bench $(BUILD)/laya
	$(BUILD)/laya_bench

corpus:
	python3 scripts/corpus/build.py

# The program, the shipped model, the manual, the bash completion
# (bash-completion also reads /usr/local/share/bash-completion/completions)
# and the daemon's systemd user unit (install-daemon); the input-method
# engines are install-ibus and install-fcitx5.
install: $(BUILD)/laya install-daemon
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/laya $(DESTDIR)$(PREFIX)/share/man/man1 \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 755 $(BUILD)/laya $(DESTDIR)$(PREFIX)/bin/laya
	install -m 644 models/default.safetensors $(DESTDIR)$(PREFIX)/share/laya/default.safetensors
	install -m 644 docs/laya.1 $(DESTDIR)$(PREFIX)/share/man/man1/laya.1
	install -m 644 dist/laya.bash-completion $(DESTDIR)$(PREFIX)/share/bash-completion/completions/laya
	install -m 644 models/default.safetensors.sig $(DESTDIR)$(PREFIX)/share/laya/default.safetensors.sig
	install -m 644 models/default.intent.safetensors $(DESTDIR)$(PREFIX)/share/laya/default.intent.safetensors
	install -m 644 models/default.intent.safetensors.sig $(DESTDIR)$(PREFIX)/share/laya/default.intent.safetensors.sig

clean:
	rm -rf build build-san

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(BENCH_OBJ:.o=.d)

# ---- evaluation: peers -------------------------------------------------------
# `make bench-peers` measures Laya, Presage (English) and libime (Chinese;
# Debian packages) with the same harness: `laya eval` over the JSON-lines
# protocol of shared/EVAL.md.

PRESAGE_ADAPTER = peers/presage/laya-presage
$(PRESAGE_ADAPTER): peers/presage/laya-presage.c
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -o $@ $< -lpresage -ljansson

# libime's headers include fcitx5's (libfcitx5utils-dev, which libimecore-dev
# does not pull in) and, in lattice.h (the adapter builds its own word
# states for the learning model), Boost's (libboost-dev, not pulled in
# either); its model lives under the multiarch library directory.
LIBIME_ADAPTER = peers/libime/laya-libime
LIBIME_DEPS    = libimecore-dev libfcitx5utils-dev libime-data-language-model libboost-dev
LIBIME_LM      = /usr/lib/$(shell $(CXX) -print-multiarch)/libime/zh_CN.lm
$(LIBIME_ADAPTER): peers/libime/laya-libime.cc
	$(CXX) -std=c++17 -O2 -g -Wall -Wextra -Werror -I/usr/include/LibIME \
	  $$(pkg-config --cflags Fcitx5Utils) -DLAYA_LIBIME_LM='"$(LIBIME_LM)"' \
	  -o $@ $< -lIMECore $$(pkg-config --libs Fcitx5Utils) -ljansson

.PHONY: bench-peers presage-deps libime-deps
presage-deps:
	@dpkg -s presage libpresage-dev libpresage-data >/dev/null 2>&1 || \
	  { apt-get update && apt-get install -y presage libpresage-dev libpresage-data; }

libime-deps:
	@dpkg -s $(LIBIME_DEPS) >/dev/null 2>&1 || \
	  { apt-get update && apt-get install -y $(LIBIME_DEPS); }

# The next-word prior inside the shipped model (src/prior/prior.h): its
# Chinese half exported from the same libime model, its English half from
# pocketsphinx-en-us's trigram model (truecased by the English corpus, so
# `make corpus` first); `make prior` writes $(BUILD)/prior.safetensors and
# `laya prior add` puts it into a model file. Deterministic.
PRIOR_FOLLOWERS = 8
SPHINX_DEPS    = libsphinxbase-dev pocketsphinx-en-us
SPHINX_LM      = /usr/share/pocketsphinx/model/en-us/en-us.lm.bin
$(BUILD)/libime_prior: scripts/corpus/ngram/libime_prior.cc
	@mkdir -p $(BUILD)
	$(CXX) -std=c++17 -O2 -g -Wall -Wextra -Werror -I/usr/include/LibIME $$(pkg-config --cflags Fcitx5Utils) \
	  -o $@ $< -lIMECore $$(pkg-config --libs Fcitx5Utils)
$(BUILD)/zh-prior.safetensors: $(BUILD)/libime_prior
	$(BUILD)/libime_prior $(LIBIME_LM) $@ $(PRIOR_FOLLOWERS)
$(BUILD)/sphinx_prior: scripts/corpus/ngram/sphinx_prior.c
	@mkdir -p $(BUILD)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror $$(pkg-config --cflags sphinxbase) -o $@ $< \
	  $$(pkg-config --libs sphinxbase)
$(BUILD)/en-case.tsv: data/corpus/en/train.txt scripts/corpus/ngram/truecase.py
	@mkdir -p $(BUILD)
	python3 scripts/corpus/ngram/truecase.py $< > $@.tmp && mv $@.tmp $@
$(BUILD)/en-prior.tsv: $(BUILD)/sphinx_prior $(BUILD)/en-case.tsv
	$(BUILD)/sphinx_prior $(SPHINX_LM) $(BUILD)/en-case.tsv $@ $(PRIOR_FOLLOWERS)
$(BUILD)/prior.safetensors: $(BUILD)/zh-prior.safetensors $(BUILD)/en-prior.tsv scripts/corpus/ngram/prior_table.py
	python3 scripts/corpus/ngram/prior_table.py $(BUILD)/zh-prior.safetensors $(BUILD)/en-prior.tsv $@
# The model's per-token probabilities for scripts/model_headroom.py (an
# analysis tool, not part of `make`).
$(BUILD)/token_logprobs: scripts/token_logprobs.c $(BUILD)/liblaya.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
.PHONY: prior sphinx-deps
sphinx-deps:
	@dpkg -s $(SPHINX_DEPS) >/dev/null 2>&1 || \
	  { apt-get update && apt-get install -y $(SPHINX_DEPS); }
prior: libime-deps sphinx-deps
	@[ -f data/corpus/en/train.txt ] || { echo "make prior: run make corpus first (the English corpus truecases the English half)"; exit 1; }
	$(MAKE) $(BUILD)/prior.safetensors

# TEXT=... (default data/corpus/en/valid.txt), CHARS=4000, ZH_TEXT=...
# (default data/corpus/zh/valid.txt), ZH_CHARS=2000: see peers/bench.sh
bench-peers: presage-deps libime-deps $(BUILD)/laya
	$(MAKE) $(PRESAGE_ADAPTER) $(LIBIME_ADAPTER)
	LAYA=$(BUILD)/laya OUT=$(BUILD)/peers sh peers/bench.sh

# ---- daemon and IBus engine ------------------------------------------------
# src/server (in LIB_SRC): the JSON-lines protocol (proto_) shared by `laya
# serve --stdio` and the Unix-socket daemon `laya serve --socket` (srv_).
# The IBus engine is built only on request (`make ibus`, needs
# libibus-1.0-dev); `make test-e2e` drives it under Xvfb.

IBUS_CFLAGS = $(shell pkg-config --cflags ibus-1.0)
IBUS_LIBS   = $(shell pkg-config --libs ibus-1.0)
IBUS_SRC    = $(sort $(wildcard src/ibus/*.c))
IBUS_OBJ    = $(IBUS_SRC:%.c=$(BUILD)/%.o)
$(IBUS_OBJ): CFLAGS += $(IBUS_CFLAGS)
-include $(IBUS_OBJ:.o=.d)

$(BUILD)/ibus-engine-laya: $(IBUS_OBJ) $(BUILD)/liblaya.a
	$(CC) $(CFLAGS) -o $@ $^ $(IBUS_LIBS) $(LDLIBS)

# The component XML names the engine's absolute path; dist/*.in are filled
# in here. ibus-daemon reads components only from its own data directory
# (/usr/share/ibus/component, pkg-config's ibus-1.0 pkgdatadir) or from
# $IBUS_COMPONENT_PATH, never from /usr/local: so the component goes to
# IBUS_COMPONENT_DIR, which is that directory whatever PREFIX is, while the
# engine, `laya` and the model go under PREFIX (install-ibus includes
# install: an engine without its model would suggest nothing). A private
# prefix (no root) sets IBUS_COMPONENT_DIR=$(PREFIX)/share/ibus/component
# and starts ibus-daemon with IBUS_COMPONENT_PATH pointing there too.
IBUS_COMPONENT_DIR ?= $(or $(shell pkg-config --variable=pkgdatadir ibus-1.0 2>/dev/null),/usr/share/ibus)/component
.PHONY: ibus install-daemon install-ibus uninstall-ibus test-e2e bench-daemon
ibus: $(BUILD)/ibus-engine-laya $(SETTINGS_IF_GTK)

install-daemon:
	install -d $(DESTDIR)$(PREFIX)/lib/systemd/user
	sed 's|@BINDIR@|$(PREFIX)/bin|g' dist/laya.service.in >$(DESTDIR)$(PREFIX)/lib/systemd/user/laya.service
	chmod 644 $(DESTDIR)$(PREFIX)/lib/systemd/user/laya.service

install-ibus: install $(BUILD)/ibus-engine-laya $(INSTALL_IF_GTK)
	install -d $(DESTDIR)$(PREFIX)/libexec $(DESTDIR)$(IBUS_COMPONENT_DIR)
	install -m 755 $(BUILD)/ibus-engine-laya $(DESTDIR)$(PREFIX)/libexec/ibus-engine-laya
	sed -e 's|@LIBEXECDIR@|$(PREFIX)/libexec|g' -e 's|@VERSION@|$(LAYA_VERSION)|g' dist/laya.xml.in \
	  >$(DESTDIR)$(IBUS_COMPONENT_DIR)/laya.xml
	chmod 644 $(DESTDIR)$(IBUS_COMPONENT_DIR)/laya.xml
	@echo "IBus engine installed: run 'ibus restart', then add Laya in ibus-setup (README: IBus)"

uninstall-ibus:
	rm -f $(DESTDIR)$(PREFIX)/libexec/ibus-engine-laya $(DESTDIR)$(IBUS_COMPONENT_DIR)/laya.xml \
	  $(DESTDIR)$(PREFIX)/libexec/laya-settings

# Needs what scripts/deps.sh installs for it (ibus, Xvfb, xdotool, x11-utils,
# dconf, python3-gi with the GTK and IBus typelibs; about 15 s), then the
# fcitx5 test (test-e2e-fcitx5 below, about 20 s).
test-e2e: $(BUILD)/laya $(BUILD)/ibus-engine-laya
	BUILD=$(BUILD) sh tests/e2e/ibus.sh
	$(MAKE) test-e2e-fcitx5
	$(MAKE) test-e2e-settings

# ---- the settings window ---------------------------------------------------
# `make settings` builds $(BUILD)/laya-settings (GTK 3: libgtk-3-dev), which
# `laya settings`, the IBus engine's menu and the fcitx5 addon start; `make
# ibus` and `make fcitx5` build it too where GTK 3's headers are installed,
# and install-ibus / install-fcitx5 install it then (install-settings:
# $(PREFIX)/libexec/laya-settings, where they look for it).
HAVE_GTK3       := $(shell pkg-config --exists gtk+-3.0 2>/dev/null && echo yes)
GTK_CFLAGS       = $(shell pkg-config --cflags gtk+-3.0)
GTK_LIBS         = $(shell pkg-config --libs gtk+-3.0)
SETTINGS_SRC     = $(sort $(wildcard src/settings/*.c))
SETTINGS_OBJ     = $(SETTINGS_SRC:%.c=$(BUILD)/%.o)
SETTINGS_IF_GTK  = $(if $(HAVE_GTK3),$(BUILD)/laya-settings)
INSTALL_IF_GTK   = $(if $(HAVE_GTK3),install-settings)
$(SETTINGS_OBJ): CFLAGS += $(GTK_CFLAGS)
-include $(SETTINGS_OBJ:.o=.d)

$(BUILD)/laya-settings: $(SETTINGS_OBJ) $(BUILD)/liblaya.a
	$(CC) $(CFLAGS) -o $@ $^ $(GTK_LIBS) $(LDLIBS)

.PHONY: settings install-settings test-e2e-settings
settings: $(BUILD)/laya-settings

install-settings: $(BUILD)/laya-settings
	install -d $(DESTDIR)$(PREFIX)/libexec
	install -m 755 $(BUILD)/laya-settings $(DESTDIR)$(PREFIX)/libexec/laya-settings

# Needs xvfb xauth xdotool x11-utils imagemagick dbus (scripts/deps.sh);
# skips where they are missing.
test-e2e-settings: $(BUILD)/laya $(BUILD)/laya-settings
	BUILD=$(BUILD) sh tests/e2e/settings.sh

# ---- fcitx5 addon ---------------------------------------------------------
# `make fcitx5` builds the addon, $(BUILD)/fcitx5/liblaya-fcitx5.so, and its
# addon file (needs libfcitx5core-dev and fcitx5-modules-dev). `make
# install-fcitx5` puts the library in fcitx5's addon directory (pkg-config's
# libdir/fcitx5; FCITX5_ADDONDIR=... to change it) and the addon file in
# $(PREFIX)/share/fcitx5/addon/laya.conf, which fcitx5 reads for PREFIX
# /usr/local or /usr (XDG_DATA_DIRS); the file names the library by its
# absolute path. The default model is $(PREFIX)/share/laya/default.safetensors
# as `make install` puts it.
# A shared object needs position-independent code and liblaya.a is not (its
# thread-local buffers use the executables' TLS model), so the addon links a
# PIC build of the modules a session needs, $(BUILD)/fcitx5/liblaya_pic.a.
FCITX5_PKGS     = Fcitx5Core Fcitx5Module
FCITX5_ADDONDIR ?= $(shell pkg-config --variable=libdir Fcitx5Core)/fcitx5
FCITX5_CXXFLAGS = -std=c++17 -O2 -g -Wall -Wextra -Werror -Wshadow -fPIC -fvisibility=hidden \
                  -Iinclude -Isrc $(shell pkg-config --cflags $(FCITX5_PKGS)) -DLAYA_PREFIX='"$(PREFIX)"'
FCITX5_SRC = $(sort $(wildcard src/fcitx5/*.cc))
FCITX5_OBJ = $(FCITX5_SRC:%.cc=$(BUILD)/fcitx5/%.o)
# The library less what only programs use (trainer, simulator, server, evaluation).
PIC_SRC    = $(filter-out src/train/% src/sim/% src/server/% src/eval/%,$(LIB_SRC))
PIC_OBJ    = $(PIC_SRC:%.c=$(BUILD)/fcitx5/pic/%.o)
FCITX5_SO  = $(BUILD)/fcitx5/liblaya-fcitx5.so

$(BUILD)/fcitx5/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -MMD -MP -c $< -o $@
$(BUILD)/fcitx5/liblaya_pic.a: $(PIC_OBJ)
	@rm -f $@
	ar rcs $@ $^
$(BUILD)/fcitx5/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CXX) $(FCITX5_CXXFLAGS) -MMD -MP -c $< -o $@
# --exclude-libs: the library's symbols stay inside the addon; -z defs:
# nothing left for fcitx5 to resolve but its own libraries.
$(FCITX5_SO): $(FCITX5_OBJ) $(BUILD)/fcitx5/liblaya_pic.a
	$(CXX) -shared -o $@ $^ $(shell pkg-config --libs Fcitx5Core) -ljansson -lsodium -lsqlite3 -lm \
	  -Wl,--exclude-libs,ALL -Wl,-z,defs
LAYA_VERSION = $(shell sed -n 's/^\#define LAYA_VERSION "\(.*\)"/\1/p' include/laya.h)
$(BUILD)/fcitx5/laya.conf: dist/laya-fcitx5.conf.in include/laya.h
	@mkdir -p $(dir $@)
	sed 's|@LIBRARY@|$(FCITX5_ADDONDIR)/liblaya-fcitx5|g; s|@VERSION@|$(LAYA_VERSION)|g' $< >$@
-include $(PIC_OBJ:.o=.d) $(FCITX5_OBJ:.o=.d)

.PHONY: fcitx5 install-fcitx5 test-e2e-fcitx5
fcitx5: $(FCITX5_SO) $(BUILD)/fcitx5/laya.conf $(SETTINGS_IF_GTK)

install-fcitx5: fcitx5 $(INSTALL_IF_GTK)
	install -d $(DESTDIR)$(FCITX5_ADDONDIR) $(DESTDIR)$(PREFIX)/share/fcitx5/addon
	install -m 644 $(FCITX5_SO) $(DESTDIR)$(FCITX5_ADDONDIR)/liblaya-fcitx5.so
	install -m 644 $(BUILD)/fcitx5/laya.conf $(DESTDIR)$(PREFIX)/share/fcitx5/addon/laya.conf

# Needs fcitx5 fcitx5-chinese-addons fcitx5-frontend-gtk3 xvfb xauth xdotool
# x11-utils imagemagick dbus python3-gi gir1.2-gtk-3.0 fonts-wqy-microhei
# (scripts/deps.sh); skips where they are missing.
test-e2e-fcitx5: $(BUILD)/laya fcitx5
	BUILD=$(BUILD) sh tests/e2e/fcitx5.sh

# ---- CUDA trainer: optional, needs nvcc; `make` and `make test` never use it ----
#   make cuda        build-cuda/laya (train --device cuda), laya_cuda_tests, laya_cuda_bench
#   make test-cuda   GPU checks against the CPU trainer (skip cleanly without a GPU)
#   make bench-cuda  tokens/s of the base training shape
# The CUDA programs link the ordinary $(BUILD)/liblaya.a; only src/cuda, the
# GPU tests and benchmarks, and cmd_train.c (with -DLAYA_CUDA: --device cuda)
# are compiled here. CUDA_DEPS=DIR: a folder with include/ and lib/ holding
# jansson and libsodium (static archives) for machines without their -dev
# packages (the GPU machine).
NVCC       ?= nvcc
CUDA_HOME  ?= /usr/local/cuda
CUDA_BUILD  = build-cuda
CUDA_DEPS  ?=
ifneq ($(CUDA_DEPS),)
  CFLAGS += -I$(CUDA_DEPS)/include
  LDLIBS := -L$(CUDA_DEPS)/lib $(LDLIBS)
endif
CUDA_ARCH   = -gencode=arch=compute_90,code=sm_90
NVCCFLAGS   = -O3 -std=c++17 $(CUDA_ARCH) -Iinclude -Isrc -I$(CUDA_HOME)/include -Xcompiler -Wall,-Wextra,-Werror
CUDA_CFLAGS = $(CFLAGS) -I$(CUDA_HOME)/include -DLAYA_CUDA
CUDA_LDLIBS = $(LDLIBS) -L$(CUDA_HOME)/lib64 -lcublas -lcudart_static -Wl,-rpath,$(CUDA_HOME)/lib64 \
              -lstdc++ -ldl -lrt -lpthread

CUDA_OBJ       = $(patsubst %.c,$(CUDA_BUILD)/%.o,$(sort $(wildcard src/cuda/*.c))) \
                 $(patsubst %.cu,$(CUDA_BUILD)/%.o,$(sort $(wildcard src/cuda/*.cu)))
CUDA_CLI_OBJ   = $(filter-out $(BUILD)/src/cli/cmd_train.o,$(CLI_OBJ)) $(CUDA_BUILD)/src/cli/cmd_train.o
CUDA_TEST_OBJ  = $(patsubst %.c,$(CUDA_BUILD)/%.o,$(sort $(wildcard tests/cuda/*.c)) tests/runner.c)
CUDA_BENCH_OBJ = $(patsubst %.c,$(CUDA_BUILD)/%.o,$(sort $(wildcard bench/cuda/*.c)) bench/bench_main.c) \
                 $(patsubst %.cu,$(CUDA_BUILD)/%.o,$(sort $(wildcard bench/cuda/*.cu)))

$(CUDA_BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CUDA_CFLAGS) -MMD -MP -c $< -o $@
$(CUDA_BUILD)/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -MMD -MP -c $< -o $@
$(CUDA_BUILD)/tests/%.o: CUDA_CFLAGS += -Itests
$(CUDA_BUILD)/bench/%.o: CUDA_CFLAGS += -Ibench

$(CUDA_BUILD)/laya: $(CUDA_CLI_OBJ) $(CUDA_OBJ) $(BUILD)/liblaya.a
	$(CC) $(CUDA_CFLAGS) -o $@ $^ $(CUDA_LDLIBS)
$(CUDA_BUILD)/laya_cuda_tests: $(CUDA_TEST_OBJ) $(CUDA_OBJ) $(BUILD)/liblaya.a
	$(CC) $(CUDA_CFLAGS) -o $@ $^ $(CUDA_LDLIBS)
$(CUDA_BUILD)/laya_cuda_bench: $(CUDA_BENCH_OBJ) $(CUDA_OBJ) $(BUILD)/liblaya.a
	$(CC) $(CUDA_CFLAGS) -o $@ $^ $(CUDA_LDLIBS)

.PHONY: test-cuda bench-cuda
cuda: $(CUDA_BUILD)/laya $(CUDA_BUILD)/laya_cuda_tests $(CUDA_BUILD)/laya_cuda_bench
test-cuda: $(CUDA_BUILD)/laya_cuda_tests
	$(CUDA_BUILD)/laya_cuda_tests
bench-cuda: $(CUDA_BUILD)/laya_cuda_bench
	$(CUDA_BUILD)/laya_cuda_bench
-include $(CUDA_OBJ:.o=.d) $(CUDA_TEST_OBJ:.o=.d) $(CUDA_BENCH_OBJ:.o=.d) $(CUDA_BUILD)/src/cli/cmd_train.d

# 64 clients x 1,000 suggest requests on loopback (MODEL=..., default the shipped one).
MODEL ?= models/default.safetensors
bench-daemon: $(BUILD)/laya
	python3 bench/daemon_load.py --laya $(BUILD)/laya --model $(MODEL)

# ---- fuzzing (issue 17): libFuzzer targets under fuzz/ ------------------------
#   make fuzz          each target for FUZZ_SECONDS (default 60), ASan+UBSan; a
#                      crash stops it (the input is in build-fuzz/crash/)
#   make fuzz-seeds    rewrites the seed corpora fuzz/corpus/<target>/ (committed)
#   make fuzz-cov      the library's line and function coverage over the corpora
# The library is built again with clang-14 into build-fuzz/ with -DLAYA_FUZZ,
# which alone turns off the model loader's signature and checksum checks
# (model_sign.h), so that mutated files reach the parser. New inputs go to
# build-fuzz/corpus/<target>/, never into the repository.
FUZZ_CC      ?= clang-14
FUZZ_COV     ?= llvm-cov-14
FUZZ_PROF    ?= llvm-profdata-14
FUZZ_SECONDS ?= 60
FUZZ_BUILD    = build-fuzz
FUZZ_TARGETS  = model tok proto session intent pipeline
# nonnull-attribute is recoverable only so that fuzz/ubsan.supp can name
# findings waiting for a fix; halt_on_error stops on every other one.
FUZZ_SAN      = -fsanitize=address,undefined -fno-sanitize-recover=all -fsanitize-recover=nonnull-attribute \
                -fno-omit-frame-pointer
FUZZ_ENV      = UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=fuzz/ubsan.supp
# clang's -Wconstant-logical-operand flags the kernel templates' constant
# conditions (kern_q_tmpl.h), which gcc accepts.
FUZZ_WARN     = -Wno-constant-logical-operand
FUZZ_XCFLAGS  = -DLAYA_FUZZ -fsanitize=fuzzer-no-link $(FUZZ_SAN) $(FUZZ_WARN)
FUZZ_COVFLAGS = -DLAYA_FUZZ -fsanitize=fuzzer-no-link -fprofile-instr-generate -fcoverage-mapping $(FUZZ_WARN)
FUZZ_SRC      = fuzz/fuzz_common.c

.PHONY: fuzz fuzz-lib fuzz-bins fuzz-seeds fuzz-cov
fuzz-lib:
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) XCFLAGS="$(FUZZ_XCFLAGS)" $(FUZZ_BUILD)/liblaya.a

fuzz-bins: fuzz-lib
	for t in $(FUZZ_TARGETS); do \
	  $(FUZZ_CC) $(CFLAGS) $(FUZZ_XCFLAGS) -fsanitize=fuzzer -Ifuzz -o $(FUZZ_BUILD)/fuzz_$$t fuzz/fuzz_$$t.c \
	    $(FUZZ_SRC) $(FUZZ_BUILD)/liblaya.a $(LDLIBS) || exit 1; \
	done

fuzz: fuzz-bins
	@mkdir -p $(FUZZ_BUILD)/crash
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t; \
	  echo "== fuzz_$$t for $(FUZZ_SECONDS) s"; \
	  case $$t in model) len=65536 ;; *) len=8192 ;; esac; \
	  $(FUZZ_ENV) $(FUZZ_BUILD)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -max_len=$$len -print_final_stats=1 -timeout=20 \
	    -rss_limit_mb=2048 -artifact_prefix=$(FUZZ_BUILD)/crash/$$t- \
	    $(FUZZ_BUILD)/corpus/$$t fuzz/corpus/$$t >$(FUZZ_BUILD)/$$t.log 2>&1 || \
	    { tail -n 80 $(FUZZ_BUILD)/$$t.log; echo "fuzz_$$t: FAILED (input in $(FUZZ_BUILD)/crash/)"; exit 1; }; \
	  grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+[[:space:]]+DONE)' $(FUZZ_BUILD)/$$t.log; \
	done

fuzz-seeds: $(BUILD)/liblaya.a
	$(CC) $(CFLAGS) -Ifuzz -o $(BUILD)/fuzz_seeds fuzz/fuzz_seeds.c $(FUZZ_SRC) $(BUILD)/liblaya.a $(LDLIBS)
	$(BUILD)/fuzz_seeds fuzz/corpus

# Coverage: the targets built with clang's source-based coverage (no
# sanitizers), each run once over its corpora (-runs=0), then llvm-cov's
# summary of src/ (the fuzz drivers left out).
fuzz-cov:
	$(MAKE) BUILD=build-fuzz-cov CC=$(FUZZ_CC) XCFLAGS="$(FUZZ_COVFLAGS)" build-fuzz-cov/liblaya.a
	rm -f build-fuzz-cov/*.profraw
	for t in $(FUZZ_TARGETS); do \
	  $(FUZZ_CC) $(CFLAGS) $(FUZZ_COVFLAGS) -fsanitize=fuzzer -Ifuzz -o build-fuzz-cov/fuzz_$$t fuzz/fuzz_$$t.c \
	    $(FUZZ_SRC) build-fuzz-cov/liblaya.a $(LDLIBS) || exit 1; \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t; \
	  LLVM_PROFILE_FILE=build-fuzz-cov/$$t.profraw build-fuzz-cov/fuzz_$$t -runs=0 \
	    $(FUZZ_BUILD)/corpus/$$t fuzz/corpus/$$t >build-fuzz-cov/$$t.log 2>&1 || exit 1; \
	done
	$(FUZZ_PROF) merge -sparse -o build-fuzz-cov/all.profdata build-fuzz-cov/*.profraw
	$(FUZZ_COV) report build-fuzz-cov/fuzz_model $(FUZZ_TARGETS:%=-object build-fuzz-cov/fuzz_%) \
	  -instr-profile=build-fuzz-cov/all.profdata -ignore-filename-regex='fuzz/' | tee build-fuzz-cov/report.txt

# ---- soak (issue 17): the daemon under mixed clients ---------------------------
#   make soak [SOAK_SECONDS=1800] [SOAK_INTERVAL=60]   build/soak/{soak.md,soak.csv,soak.png}
# Typing clients beside vanishing, garbage, huge-line, slow-reading,
# 10,000-session and huge-score ones (bench/soak.py); fails on any error
# reply to a valid request, a lost reply or a dead daemon.
SOAK_SECONDS  ?= 1800
SOAK_INTERVAL ?= 60
.PHONY: soak
soak: $(BUILD)/laya
	python3 bench/soak.py --laya $(BUILD)/laya --model $(MODEL) --seconds $(SOAK_SECONDS) \
	  --interval $(SOAK_INTERVAL) --out $(BUILD)/soak
