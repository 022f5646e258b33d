from contract.envelope import GatewayEvent as GatewayEvent
from contract.results import ShutdownReport as ShutdownReport
from tui_gateway.engine_setup import GatewayConfig as GatewayConfig
from tui_gateway.gateway import Gateway as Gateway

__all__ = ["Gateway", "GatewayConfig", "GatewayEvent", "ShutdownReport"]
