"""The symbolic layer: what a user writes. Grids and dimensions, Functions and their data,
sparse points, derivatives and their finite-difference weights, staggering, tensors and
vector calculus, equations, subdomains and conditions."""
