"""Stand-in for numba (not installed in either virtualenv): ``numba.jit`` returns the function
unchanged, which is what numba's object-mode fallback does for python_loss.py's gradient."""


def jit(*args, **kwargs):
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda func: func
