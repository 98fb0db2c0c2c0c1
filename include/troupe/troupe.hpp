// troupe.hpp: the whole public API in one include.
#pragma once

#include "troupe/actor/actor.hpp"
#include "troupe/actor/behavior.hpp"
#include "troupe/actor/blocking_actor.hpp"
#include "troupe/actor/error.hpp"
#include "troupe/actor/event_actor.hpp"
#include "troupe/actor/group.hpp"
#include "troupe/actor/message.hpp"
#include "troupe/actor/registry.hpp"
#include "troupe/actor/system_messages.hpp"
#include "troupe/actor/typed_actor.hpp"
#include "troupe/pattern/divide_and_conquer.hpp"
#include "troupe/pattern/map.hpp"
#include "troupe/pattern/task_group.hpp"
#include "troupe/runtime/actor_system.hpp"
#include "troupe/runtime/config.hpp"
#include "troupe/util/affinity.hpp"
