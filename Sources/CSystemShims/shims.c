// Intentionally empty: the target exists to export headers to Swift.
#include "CSystemShims.h"
