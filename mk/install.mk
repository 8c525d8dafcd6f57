# mk/install.mk — installs what a user builds against or runs, and the
# pkg-config file that says how to link the library.
#
#   make install [PREFIX=/usr/local] [DESTDIR=staging]
#     $(PREFIX)/include/seen.h
#     $(PREFIX)/lib/libseen.a, $(PREFIX)/lib/pkgconfig/seen.pc
#     $(PREFIX)/lib/redis/modules/seen.so   (redis-server --loadmodule ...)
#     $(PREFIX)/bin/seen-ingest
#   make uninstall [PREFIX=...] [DESTDIR=...]
#   make test-install   installs into a staging directory, then builds and
#                       runs a program with `pkg-config --cflags --libs seen`
#
# PREFIX is where the files will live (it is written into seen.pc); DESTDIR
# only stages them, as packagers do.

PREFIX ?= /usr/local
INSTALL ?= install
SEEN_VERSION := $(shell sed -n 's/^\#define SEEN_VERSION_STRING "\(.*\)"/\1/p' include/seen.h)

.PHONY: install uninstall test-install

# seen.pc, written at install time for the PREFIX of that install.
define seen_pc
prefix=$(PREFIX)
includedir=$${prefix}/include
libdir=$${prefix}/lib

Name: seen
Description: per-user seen sets with a time window and a count cap
Version: $(SEEN_VERSION)
Cflags: -I$${includedir}
Libs: -L$${libdir} -lseen -lm
endef
export seen_pc

install: $(BUILD)/libseen.a $(BUILD)/seen.so $(BUILD)/seen-ingest
	$(INSTALL) -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig \
		$(DESTDIR)$(PREFIX)/lib/redis/modules $(DESTDIR)$(PREFIX)/bin
	$(INSTALL) -m 644 include/seen.h $(DESTDIR)$(PREFIX)/include/seen.h
	$(INSTALL) -m 644 $(BUILD)/libseen.a $(DESTDIR)$(PREFIX)/lib/libseen.a
	printf '%s\n' "$$seen_pc" > $(DESTDIR)$(PREFIX)/lib/pkgconfig/seen.pc
	chmod 644 $(DESTDIR)$(PREFIX)/lib/pkgconfig/seen.pc
	$(INSTALL) -m 755 $(BUILD)/seen.so $(DESTDIR)$(PREFIX)/lib/redis/modules/seen.so
	$(INSTALL) -m 755 $(BUILD)/seen-ingest $(DESTDIR)$(PREFIX)/bin/seen-ingest

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/include/seen.h $(DESTDIR)$(PREFIX)/lib/libseen.a \
		$(DESTDIR)$(PREFIX)/lib/pkgconfig/seen.pc $(DESTDIR)$(PREFIX)/lib/redis/modules/seen.so \
		$(DESTDIR)$(PREFIX)/bin/seen-ingest

INSTALL_TEST_DIR = $(BUILD)/install-test
test-install:
	rm -rf $(INSTALL_TEST_DIR)
	$(MAKE) --no-print-directory install DESTDIR=$(CURDIR)/$(INSTALL_TEST_DIR) PREFIX=/opt/seen
	PKG_CONFIG_PATH=$(INSTALL_TEST_DIR)/opt/seen/lib/pkgconfig \
		PKG_CONFIG_SYSROOT_DIR=$(CURDIR)/$(INSTALL_TEST_DIR) bash tests/install/check.sh \
		$(INSTALL_TEST_DIR)/opt/seen
	$(MAKE) --no-print-directory uninstall DESTDIR=$(CURDIR)/$(INSTALL_TEST_DIR) PREFIX=/opt/seen
	@left="$$(find $(INSTALL_TEST_DIR) -type f)"; [ -z "$$left" ] || \
		{ echo "uninstall left: $$left" >&2; exit 1; }

EXTRA_TESTS += test-install
