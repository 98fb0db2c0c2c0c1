// troupe.hpp: the whole public API in one include.
#pragma once

#include "troupe/fwd.hpp"

// util, runtime
#include "troupe/runtime/config.hpp"
#include "troupe/runtime/placement.hpp"
#include "troupe/util/affinity.hpp"
#include "troupe/util/cache.hpp"
#include "troupe/util/spsc_ring.hpp"

// actors
#include "troupe/actor/actor.hpp"
#include "troupe/actor/actor_system.hpp"
#include "troupe/actor/behavior.hpp"
#include "troupe/actor/blocking_actor.hpp"
#include "troupe/actor/error.hpp"
#include "troupe/actor/event_actor.hpp"
#include "troupe/actor/group.hpp"
#include "troupe/actor/message.hpp"
#include "troupe/actor/registry.hpp"
#include "troupe/actor/scoped_actor.hpp"
#include "troupe/actor/system_messages.hpp"
#include "troupe/actor/typed_actor.hpp"

// the stream engine
#include "troupe/stream.hpp"

// patterns
#include "troupe/pattern/branches.hpp"
#include "troupe/pattern/divide_and_conquer.hpp"
#include "troupe/pattern/farm.hpp"
#include "troupe/pattern/map.hpp"
#include "troupe/pattern/map_accelerator.hpp"
#include "troupe/pattern/map_stage.hpp"
#include "troupe/pattern/parallel_merge.hpp"
#include "troupe/pattern/pipeline.hpp"
#include "troupe/pattern/placed.hpp"
#include "troupe/pattern/seq.hpp"
#include "troupe/pattern/spawn_pattern.hpp"
#include "troupe/pattern/stage.hpp"
#include "troupe/pattern/task_group.hpp"
