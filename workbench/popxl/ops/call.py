"""popxl.ops.call."""
from workbench.ops.call_site import CallSiteInfo
from workbench.ops.control_flow import call, call_with_info
