-- grant_slots(window, policies, most, least): grant admission slots, atomically. Only when at
-- least `least` of the window's slots are free (so one grant, and one hand-off, covers several
-- samples); then, while the fleet has fewer than the window's samples in flight,
-- admit one more sample of the tenant with work whose in-flight count after the grant, divided by
-- its weight, is least (ties: the tenant whose waiting batch came first), never above the tenant's
-- cap nor a batch's. Within a tenant its batches go in the order they came. A grant only raises
-- the batch's admitted count: the caller sends the samples up to it, and whoever resumes the batch
-- later does so if that caller died. Batches with nothing more to admit leave the ready set.
--
-- KEYS as in admission_state.lua. `window`: the most samples in flight; `policies`: JSON
-- {tenant: [weight, cap (0: none)]} (tenants not named: weight 1, no cap); `most`: the most grants
-- to make in this call; `least`: the fewest free slots worth granting (1: any).
-- Returns a flat list: batch id, its admitted count after the grants, for each batch granted any;
-- then what the grants left: `total` samples in flight, and per batch its `tenant_of`, `flying`,
-- `admitted` and `limit` (for quiet_until, leave_and_admit.lua).
local function grant_slots(window, policies_json, most_grants, least)
    local most = most_grants
    local ok, policies = pcall(cjson.decode, policies_json)
    if not ok or type(policies) ~= 'table' then
        policies = {}
    end
    local tenant_of = {}
    do
        local flat = redis.call('HGETALL', KEYS[1])
        for i = 1, #flat, 2 do
            tenant_of[flat[i]] = flat[i + 1]
        end
    end
    local admitted = numbers(KEYS[2])
    local left = numbers(KEYS[3])
    local parked = numbers(KEYS[4])
    local limit = numbers(KEYS[5])
    local cap = numbers(KEYS[6])

    -- In flight now: per batch, per tenant, and in all.
    local batch_flying, tenant_flying, total = {}, {}, 0
    for batch, tenant in pairs(tenant_of) do
        local n = flying(admitted[batch], left[batch], parked[batch])
        batch_flying[batch] = n
        tenant_flying[tenant] = (tenant_flying[tenant] or 0) + n
        total = total + n
    end
    local after = {total = total, tenant_of = tenant_of, flying = batch_flying, admitted = admitted, limit = limit}
    if window - total < math.max(1, least) or most <= 0 then
        return {}, after
    end

    -- Each tenant's batches with samples to admit, oldest first (the zset's order).
    local queues, heads, order = {}, {}, {}
    local ready = redis.call('ZRANGE', KEYS[8], 0, -1)
    for position, batch in ipairs(ready) do
        local tenant = tenant_of[batch]
        if tenant == nil or num(admitted[batch]) >= num(limit[batch]) then
            redis.call('ZREM', KEYS[8], batch)
        else
            order[batch] = position
            if queues[tenant] == nil then
                queues[tenant] = {}
                heads[tenant] = 1
            end
            table.insert(queues[tenant], batch)
        end
    end

    local function policy(tenant)
        local p = policies[tenant]
        if type(p) ~= 'table' then
            return 1, 0
        end
        return math.max(1, num(p[1])), math.max(0, num(p[2]))
    end

    -- The tenant's first batch that may take a sample now (a batch at its cap is passed over).
    local function head(tenant)
        local queue = queues[tenant]
        while heads[tenant] <= #queue do
            local batch = queue[heads[tenant]]
            local batch_cap = num(cap[batch])
            if num(admitted[batch]) < num(limit[batch]) and (batch_cap == 0 or batch_flying[batch] < batch_cap) then
                return batch
            end
            heads[tenant] = heads[tenant] + 1
        end
        return nil
    end

    local granted, granted_order = {}, {}
    while total < window and most > 0 do
        local best, best_batch, best_flying, best_weight
        for tenant in pairs(queues) do
            local weight, tenant_cap = policy(tenant)
            local n = tenant_flying[tenant] or 0
            if tenant_cap == 0 or n < tenant_cap then
                local batch = head(tenant)
                if batch ~= nil then
                    -- (n + 1) / weight < (best + 1) / best_weight, without division.
                    local better = best == nil
                    if not better then
                        local lhs, rhs = (n + 1) * best_weight, (best_flying + 1) * weight
                        better = lhs < rhs or (lhs == rhs and order[batch] < order[best_batch])
                    end
                    if better then
                        best, best_batch, best_flying, best_weight = tenant, batch, n, weight
                    end
                end
            end
        end
        if best == nil then
            break
        end
        admitted[best_batch] = num(admitted[best_batch]) + 1
        batch_flying[best_batch] = batch_flying[best_batch] + 1
        tenant_flying[best] = (tenant_flying[best] or 0) + 1
        total = total + 1
        most = most - 1
        if granted[best_batch] == nil then
            table.insert(granted_order, best_batch)
        end
        granted[best_batch] = admitted[best_batch]
    end

    local out = {}
    for _, batch in ipairs(granted_order) do
        redis.call('HSET', KEYS[2], batch, granted[batch])
        if granted[batch] >= num(limit[batch]) then
            redis.call('ZREM', KEYS[8], batch)
        end
        table.insert(out, batch)
        table.insert(out, granted[batch])
    end
    after.total = total
    return out, after
end
