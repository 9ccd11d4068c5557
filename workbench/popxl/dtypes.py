"""popxl.dtypes: the data types."""
from workbench.ir.dtypes import bool_ as bool  # popxl names the boolean type `bool`
from workbench.ir.dtypes import (complex64, complex128, double, dtype, float, float8_143, float8_152,
                                 float16, float32, float64, half, int8, int16, int32, int64,
                                 np_dtype_float8_143, np_dtype_float8_152, uint8, uint16, uint32, uint64)
