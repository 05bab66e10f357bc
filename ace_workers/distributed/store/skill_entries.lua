-- The newest change-log entries for one skill's history (skill_entries.py), with the images of a big
-- entry (an import's are tens of MB) cut in Redis to that skill's part: {"<id>": <value>}, or {} where
-- its key is absent. A client parsing the whole entry spent 0.3-0.7 s per read of a 100,000-skill import.
--
-- KEYS[1]: the change log (a stream). ARGV: the newest entry id to read ('+' or '(<id>'), how many
-- entries, the bytes of before + after above which an entry is cut, the skill's key as the entry's
-- JSON spells it ('"<id>":'; '' never cuts). Returns the entries as XREVRANGE does, each with a third
-- element: 1 if its images were cut. An entry whose part cannot be cut out alone (its key found twice,
-- or its value not an object or null) comes whole: the client reads it as it always has.

-- The index of the last character of the JSON object or null starting at s[i]; nil if there is none.
local function value_end(s, i)
    if string.sub(s, i, i + 3) == 'null' then
        return i + 3
    end
    if string.byte(s, i) ~= 123 then -- '{'
        return nil
    end
    local depth, j, n = 0, i, #s
    while j <= n do
        local c = string.byte(s, j)
        if c == 34 then -- '"': skip the string, escapes and all
            j = j + 1
            while true do
                local q = string.find(s, '["\\]', j)
                if not q then
                    return nil
                end
                if string.byte(s, q) == 92 then
                    j = q + 2
                else
                    j = q
                    break
                end
            end
        elseif c == 123 or c == 91 then
            depth = depth + 1
        elseif c == 125 or c == 93 then
            depth = depth - 1
            if depth == 0 then
                return j
            end
        end
        j = j + 1
    end
    return nil
end

-- The skill's part of one side's images, or nil when it cannot be cut out alone.
local function part_of(images, key)
    local at = string.find(images, key, 1, true)
    if not at then
        return '{}'
    end
    if string.find(images, key, at + 1, true) then
        return nil
    end
    local start = at + #key
    while string.byte(images, start) == 32 do
        start = start + 1
    end
    local last = value_end(images, start)
    if not last then
        return nil
    end
    return '{' .. string.sub(images, at, last) .. '}'
end

local entries = redis.call('XREVRANGE', KEYS[1], ARGV[1], '-', 'COUNT', ARGV[2])
local big, key = tonumber(ARGV[3]), ARGV[4]
for _, entry in ipairs(entries) do
    local fields, sides, size = entry[2], {}, 0
    for i = 1, #fields, 2 do
        if fields[i] == 'before' or fields[i] == 'after' then
            sides[fields[i]] = i + 1
            size = size + #fields[i + 1]
        end
    end
    local cut = 0
    if key ~= '' and size > big then
        local parts, whole = {}, false
        for _, at in pairs(sides) do
            parts[at] = part_of(fields[at], key)
            whole = whole or parts[at] == nil
        end
        if not whole then
            for at, part in pairs(parts) do
                fields[at] = part
            end
            cut = 1
        end
    end
    entry[3] = cut
end
return entries
