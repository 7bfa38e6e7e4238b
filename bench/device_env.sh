# Source on the GPU machine (from the repository root): makes `import layoutproof` work
# without installing the package (the image has numpy, sympy and cupy; z3 and drawsvg are
# imported lazily and are not needed by the GPU path).
_lp_root="$(pwd)"
# z3-solver travels as a wheel in .whl/ (carried by the device call)
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
rm -rf /tmp/lp && mkdir -p /tmp/lp/layoutproof
for f in "$_lp_root"/algebra/*; do ln -s "$f" /tmp/lp/layoutproof/; done
for d in verify proofs gpu; do ln -s "$_lp_root/$d" /tmp/lp/layoutproof/$d; done
export PYTHONPATH=/tmp/lp${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
