"""pitwatch: the shared core of the table-game audit.

Layers, each importing only those above it in this list:
blackjack (the game itself) -> events (model and codec) -> engine -> packs -> store
-> audit.
No Kafka or Faust import lives here; the stages (producers, processors, replay)
import the core, never the other way round.
"""

__version__ = "0.1.0"
