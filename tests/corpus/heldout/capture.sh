#!/usr/bin/env bash
# How the held-out corpus was made.  `setup` needs the package registries
# (PyPI, npm, crates.io, Debian apt); the captures themselves run offline.
#   bash capture.sh setup      # fetch + unpack projects under /tmp/heldout, introduce the bugs
#   bash capture.sh            # findings/capture.sh + tests/capture.sh, then derive truth
# Tools: /tmp/corpus-venv (ruff mypy pylint flake8 yamllint shellcheck hadolint),
# /tmp/corpus-npm (eslint pyright tsc biome markdownlint[-cli2] + formatters),
# rustup cargo/clippy, Debian golang-go 1.19 + go-staticcheck.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
H=/tmp/heldout
REG() { echo ~/.cargo/registry/src/*/"$1"; }

setup() {
	mkdir -p $H/dl/npm && cd $H/dl
	/tmp/corpus-venv/bin/pip download --no-deps --no-binary :all: six==1.17.0 itsdangerous==2.2.0 python-slugify==9.2.0
	cd $H && for f in dl/six-1.17.0.tar.gz dl/itsdangerous-2.2.0.tar.gz dl/python_slugify-9.2.0.tar.gz; do tar xzf $f; done
	mv six-1.17.0 six; mv itsdangerous-2.2.0 itsdangerous; mv python_slugify-9.2.0 slugify
	(cd dl/npm && npm pack semver@7.8.6 minimist@1.2.8 @humanwhocodes/object-schema@1.2.1 gensync@1.0.0-beta.2)
	mkdir node-semver minimist object-schema gensync
	tar xzf dl/npm/semver-7.8.6.tgz -C node-semver --strip-components=1
	tar xzf dl/npm/minimist-1.2.8.tgz -C minimist --strip-components=1
	tar xzf dl/npm/humanwhocodes-object-schema-1.2.1.tgz -C object-schema --strip-components=1
	tar xzf dl/npm/gensync-1.0.0-beta.2.tgz -C gensync --strip-components=1
	# crates: a scratch crate depending on semver/itoa/smallvec, `cargo fetch`
	mkdir -p dl/scratch/src && printf '[package]\nname="scratch"\nversion="0.1.0"\nedition="2021"\n[dependencies]\nsemver="1"\nsmallvec="1"\n' >dl/scratch/Cargo.toml
	echo 'fn main(){}' >dl/scratch/src/main.rs && (cd dl/scratch && cargo fetch)
	cp -r "$(REG semver-1.0.28)" semver; cp -r "$(REG smallvec-1.16.6)" smallvec
	cp -r "$(REG itertools-0.13.0)" itertools && git -C itertools init -q   # already in the registry cache; actionlint needs a repo
	mkdir zerocopy && (cd "$(REG zerocopy-0.8.48)" && cp --parents cargo.sh ci/*.sh $H/zerocopy/)
	mkdir debian-bin && cp /bin/bzdiff /bin/bzgrep /bin/bzmore /bin/gzexe /usr/bin/gcore /usr/bin/gdb-add-index debian-bin/
	mkdir -p golang-crypto/boring golang-crypto/nistec/fiat      # Debian golang-1.19-src
	cp /usr/share/go-1.19/src/crypto/internal/boring/Dockerfile golang-crypto/boring/
	cp /usr/share/go-1.19/src/crypto/internal/nistec/fiat/Dockerfile golang-crypto/nistec/fiat/
	apt-get install -y golang-github-pmezard-go-difflib-dev
	mkdir -p go-difflib go-difflib-src
	cp -r /usr/share/gocode/src/github.com/pmezard/go-difflib/difflib go-difflib/
	cp -r /usr/share/gocode/src/github.com/pmezard/go-difflib/difflib go-difflib-src/
	printf 'module github.com/pmezard/go-difflib\n\ngo 1.19\n' | tee go-difflib/go.mod >go-difflib-src/go.mod

	# linter setup: eslint flat config with @eslint/js recommended (added to node-semver)
	cat >node-semver/eslint.config.js <<'EOC'
const js = require("@eslint/js");
module.exports = [
  js.configs.recommended,
  {
    files: ["**/*.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "commonjs" },
  },
];
EOC
	ln -s /tmp/corpus-npm/node_modules node-semver/node_modules

	# test setup
	python3 -m venv /tmp/heldout-venv && /tmp/heldout-venv/bin/pip install pytest==9.2.0 freezegun text-unidecode
	(cd semver && cargo test --no-run)
	(cd minimist && npm install --no-save --ignore-scripts tape@5)
	(cd object-schema && npm install --no-save --ignore-scripts --no-package-lock mocha@12.0.3 chai@4)
	(cd gensync && npm install --no-save --ignore-scripts --no-package-lock jest@30.5.2 jest-junit@17 util.promisify)
	mkdir gensync-jest22 && cp -a gensync/index.js gensync/index.js.flow gensync/package.json gensync/test gensync/README.md gensync/LICENSE gensync-jest22/
	(cd gensync-jest22 && npm install --no-save --ignore-scripts --no-package-lock jest@22.4.4 util.promisify)

	# "could not run" copies, made from the UNMODIFIED sources
	mkdir itsdangerous-missing-module && cp -a itsdangerous/{tests,pyproject.toml,src} itsdangerous-missing-module/
	rm itsdangerous-missing-module/src/itsdangerous/url_safe.py
	cp -a slugify slugify-missing-module && rm slugify-missing-module/slugify/special.py
	mkdir object-schema-missing-module && cp -a object-schema/{package.json,tests,src} object-schema-missing-module/
	rm object-schema-missing-module/src/merge-strategy.js && ln -s $H/object-schema/node_modules object-schema-missing-module/node_modules
	cp -a semver semver-compile-error && sed -i '131s/    ver.pre >= cmp.pre/    ver.pre >= cmp.prerelease/' semver-compile-error/src/eval.rs
	cp -a go-difflib go-difflib-compile-error
	sed -i '470s/len(m.a)+len(m.b))/len(m.a)+len(m.c))/' go-difflib-compile-error/difflib/difflib.go

	# the bugs (see README.md)
	sed -i '141s/if age > max_age:/if age > max_age + 1:/' itsdangerous/src/itsdangerous/timed.py
	sed -i 's/    except (TypeError, ValueError) as e:/    except TypeError as e:/' itsdangerous/src/itsdangerous/encoding.py
	sed -i 's/            if next_length <= max_length:/            if next_length < max_length:/' slugify/slugify/slugify.py
	sed -i 's/        return string\[:max_length\].strip(separator)/        return string[:max_length - 1].strip(separator)/' slugify/slugify/_legacy.py
	sed -i '111s/    ver.pre < cmp.pre/    ver.pre <= cmp.pre/; 131s/    ver.pre >= cmp.pre/    ver.pre > cmp.pre/; 145s/return ver.minor >= minor;/return ver.minor > minor;/' semver/src/eval.rs
	sed -i '19s/                + 1/                + 2/' semver/src/display.rs
	sed -i '519s/if length == 1 {/if length <= 1 {/; 41s/if length > 0 {/if length >= 0 {/' go-difflib/difflib/difflib.go
	sed -i "139s/args.indexOf('--') + 1/args.indexOf('--') + 2/; 15s/0x\[0-9a-f\]+/0x[0-9]+/" minimist/index.js
	sed -i 's/        if (typeof value2 !== "undefined") {/        if (typeof value2 === "undefined") {/' object-schema/src/merge-strategy.js
	sed -i 's/        if (typeof value !== "string" || value.length === 0) {/        if (typeof value !== "string" || value.length === 1) {/' object-schema/src/validation-strategy.js
	sed -i 's/^    arity = sync.length;/    arity = sync.length - 1;/; s/if (count === results.length) resolve(results);/if (count === results.length - 1) resolve(results);/' gensync-jest22/index.js
	# mocha truth helper (prints titlePath() of failed tests)
	cat >dl/titlepath-reporter.js <<'EOC'
const Mocha = require('/tmp/heldout/object-schema/node_modules/mocha');
const { EVENT_TEST_FAIL } = Mocha.Runner.constants;
class TitlePath extends Mocha.reporters.Base {
  constructor(runner, options) {
    super(runner, options);
    runner.on(EVENT_TEST_FAIL, (test, err) => {
      console.log(JSON.stringify({ type: test.type, titlePath: test.titlePath(), err: String(err && err.message).slice(0, 80) }));
    });
  }
}
module.exports = TitlePath;
EOC
}

if [ "${1:-}" = setup ]; then setup; exit 0; fi
"$HERE/findings/capture.sh" "$@"
python3 "$HERE/findings/derive_truth.py"
"$HERE/tests/capture.sh" "$@"
python3 "$HERE/tests/derive_truth.py"
