# Placeholder: the multi-stage, non-root, shell-less image (with its build script and its tests) arrives with
# the "Ship it" issue. Until then run hookguard with `npm ci && npm start` (see README.md).
