-- The job that wrote event A[1] for each user of a list (users of one node, users_of): its
-- name, '' for a row written by no job, or false (a null reply) where the user has no row.
local users, A = users_of()
local out = {}
for j = 1, #users do
  P = users[j]
  out[j] = redis.call('HGET', nkey(A[1]), 'w')
end
return out
